// Every Loki destination's egress governor, seen as one by the app: the term's budget load, the store
// that carries every budget count with the commits, the readiness reason, the watchdog's hold and the
// /statusz section. The top-level destination's governor (if any) keeps the section's shape as it was
// with one destination; the others are listed under `destinations`.
import type { CheckpointStore } from "../state/store.ts";
import type { GovernedSink } from "./governed-sink.ts";

export class EgressGovernors {
  /** The top-level destination's governor, when it has one. */
  readonly main: GovernedSink | undefined;
  /** The governors of orgs' own destinations, in config order. */
  readonly others: readonly GovernedSink[];

  constructor(main: GovernedSink | undefined, others: readonly GovernedSink[]) {
    this.main = main;
    this.others = others;
  }

  get all(): GovernedSink[] {
    return this.main ? [this.main, ...this.others] : [...this.others];
  }

  get configured(): boolean {
    return this.all.length > 0;
  }

  /**
   * A term's first act: each governor continues its day's count from the store. One that cannot be
   * read is reported to `onError` and counts from what this process knew; the others still load.
   */
  async startTerm(store: CheckpointStore, onError: (g: GovernedSink, err: unknown) => void): Promise<void> {
    for (const g of this.all) {
      try {
        await g.startTerm(store);
      } catch (err) {
        onError(g, err);
      }
    }
  }

  /** The store a pipeline commits through: each commit carries every destination's budget count. */
  bind(store: CheckpointStore): CheckpointStore {
    let bound = store;
    for (const g of this.all) bound = g.bind(bound);
    return bound;
  }

  /** The first paused destination's readiness reason (the top-level one first). */
  get pausedReason(): string | undefined {
    for (const g of this.all) {
      const reason = g.pausedReason;
      if (reason !== undefined) return reason;
    }
    return undefined;
  }

  /**
   * For the watchdog: held while any destination is paused. A paused destination holds only its own
   * lanes, so a stall elsewhere during a pause goes unnoticed until the pause ends (docs/egress.md).
   */
  hold(): { paused: boolean; resumedAtMono: number | undefined } {
    let paused = false;
    let resumedAtMono: number | undefined;
    for (const g of this.all) {
      const h = g.hold();
      paused ||= h.paused;
      if (h.resumedAtMono !== undefined && (resumedAtMono === undefined || h.resumedAtMono > resumedAtMono))
        resumedAtMono = h.resumedAtMono;
    }
    return { paused, resumedAtMono };
  }

  /** The /statusz egress section. */
  status(): Record<string, unknown> {
    const main = this.main?.status() ?? { configured: false };
    if (this.others.length === 0) return main;
    return { ...main, destinations: this.others.map((g) => g.status()) };
  }
}

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
   * The pipeline routes a budget pause holds right now ("" is the top-level destination's, else the
   * destination's name): the watchdog leaves their lanes out, and still watches every other lane.
   */
  pausedRoutes(): Set<string> {
    const routes = new Set<string>();
    for (const g of this.all) if (g.hold().paused) routes.add(g.destination?.name ?? "");
    return routes;
  }

  /** When the last pause of any destination ended: the time spent paused is not held against anyone. */
  lastResumedMono(): number | undefined {
    let last: number | undefined;
    for (const g of this.all) {
      const at = g.hold().resumedAtMono;
      if (at !== undefined && (last === undefined || at > last)) last = at;
    }
    return last;
  }

  /** The /statusz egress section. */
  status(): Record<string, unknown> {
    const main = this.main?.status() ?? { configured: false };
    if (this.others.length === 0) return main;
    return { ...main, destinations: this.others.map((g) => g.status()) };
  }
}

// A checkpoint store that remembers whether its backend answers: when the current run of failures
// started and what the last one said, cleared by the next success. Readiness and the watchdog read it;
// the sources and the committer see an ordinary store. A fence refusal is leadership, not an outage,
// and is not counted.
import type { Meter } from "@opentelemetry/api";
import { describeError } from "../errors.ts";
import { StateGauge } from "../obs/metrics.ts";
import type { Clock } from "../util/clock.ts";
import { StateFenceError } from "./errors.ts";
import type { CheckpointStore, WriteFence } from "./store.ts";

export interface StoreFailure {
  /** Monotonic ms (of the injected clock) of the first failure of the current run. */
  sinceMono: number;
  /** The last failure, one line. */
  error: string;
  /** Failed calls in the current run. */
  count: number;
}

export class TrackedStore implements CheckpointStore {
  readonly inner: CheckpointStore;
  readonly #clock: Clock;
  readonly #errors;
  readonly #up: StateGauge;
  #failure: StoreFailure | undefined;
  /** Start (monotonic ms) of every call still waiting for the backend. */
  readonly #inFlight = new Set<{ startedMono: number }>();

  constructor(inner: CheckpointStore, deps: { meter: Meter; clock: Clock }) {
    this.inner = inner;
    this.#clock = deps.clock;
    this.#errors = deps.meter.createCounter("sf2loki_checkpoint_store_errors", {
      description: "Failed checkpoint store calls (after the store's own retries), by operation.",
    });
    this.#up = new StateGauge(
      deps.meter,
      "sf2loki_checkpoint_store_up",
      "1 while the checkpoint store answers, 0 from its first failed call until the next success.",
    );
    this.#up.set(1);
    // Exported at zero from the start, so an alert on the rate has data on a healthy daemon.
    for (const op of ["load", "commit", "claim"]) this.#errors.add(0, { op });
  }

  /**
   * The current run of failures, or undefined while the store answers. A call still unanswered after
   * `silentAfterMs` counts too: a blackholed backend fails nothing until its deadlines run out.
   */
  failing(silentAfterMs = Number.POSITIVE_INFINITY): StoreFailure | undefined {
    if (this.#failure) return this.#failure;
    let oldest: number | undefined;
    for (const call of this.#inFlight) oldest = Math.min(oldest ?? call.startedMono, call.startedMono);
    if (oldest === undefined) return undefined;
    const silentMs = this.#clock.monotonic() - oldest;
    if (silentMs < silentAfterMs) return undefined;
    return { sinceMono: oldest, error: `no answer for ${Math.round(silentMs / 1000)}s`, count: 0 };
  }

  get location(): string {
    return this.inner.location;
  }

  load(key: string): Promise<string | undefined> {
    return this.#tracked("load", () => this.inner.load(key));
  }

  commit(key: string, value: string): Promise<void> {
    return this.#tracked("commit", () => this.inner.commit(key, value));
  }

  commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    return this.#tracked("commit", () => this.inner.commitMany(items));
  }

  replace(items: Readonly<Record<string, string>>): Promise<void> {
    return this.#tracked("commit", () => this.inner.replace(items));
  }

  delete(key: string): Promise<void> {
    return this.#tracked("commit", () => this.inner.delete(key));
  }

  snapshot(): Promise<Record<string, string>> {
    return this.#tracked("load", () => this.inner.snapshot());
  }

  claimTerm(): Promise<void> {
    return this.#tracked("claim", () => this.inner.claimTerm());
  }

  readFenceEpoch(): Promise<number | undefined> {
    return this.#tracked("load", () => this.inner.readFenceEpoch());
  }

  reset(): void {
    this.inner.reset();
  }

  setFence(fence: WriteFence | undefined): void {
    this.inner.setFence(fence);
  }

  close(): Promise<void> {
    return this.inner.close();
  }

  async #tracked<T>(op: string, call: () => Promise<T>): Promise<T> {
    const pending = { startedMono: this.#clock.monotonic() };
    this.#inFlight.add(pending);
    try {
      const result = await call();
      if (this.#failure) {
        this.#failure = undefined;
        this.#up.set(1);
      }
      return result;
    } catch (err) {
      if (!(err instanceof StateFenceError)) {
        this.#errors.add(1, { op });
        this.#up.set(0);
        const error = describeError(err);
        this.#failure = this.#failure
          ? { ...this.#failure, error, count: this.#failure.count + 1 }
          : { sinceMono: pending.startedMono, error, count: 1 };
      }
      throw err;
    } finally {
      this.#inFlight.delete(pending);
    }
  }
}

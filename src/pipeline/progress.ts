// The watchdog's two clocks for one run: when it last made progress (a commit landed, or a push was
// attempted) and when it last tried anything at all (a commit attempt counts too). A run that has work
// and no progress is stalled (its leader should hand over); one that has work and tries nothing is
// wedged (only a restart helps).
import type { Clock } from "../util/clock.ts";

export interface ProgressReport {
  /** Entries queued, being batched, or batches waiting to push or commit. */
  pending: boolean;
  /** Monotonic ms since the last commit or push attempt (or since the run started). */
  sinceProgressMs: number;
  /** Monotonic ms since the last attempt of any kind (push or commit). */
  sinceAttemptMs: number;
}

export class Progress {
  readonly #clock: Clock;
  #progressMono: number;
  #attemptMono: number;

  constructor(clock: Clock) {
    this.#clock = clock;
    this.#progressMono = this.#attemptMono = clock.monotonic();
  }

  /** A push attempt started, or a commit landed. */
  readonly progressed = (): void => {
    this.#progressMono = this.#attemptMono = this.#clock.monotonic();
  };

  /** A commit attempt started (it may hang or fail: not progress by itself). */
  readonly attempted = (): void => {
    this.#attemptMono = this.#clock.monotonic();
  };

  report(pending: boolean): ProgressReport {
    const now = this.#clock.monotonic();
    return { pending, sinceProgressMs: now - this.#progressMono, sinceAttemptMs: now - this.#attemptMono };
  }
}

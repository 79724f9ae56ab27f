// Time, sleep and randomness come in through this interface so tests never sleep for real.
import { setTimeout as delay } from "node:timers/promises";

export interface Clock {
  /** Wall-clock milliseconds since the epoch. */
  now(): number;
  /** Monotonic milliseconds, for staleness and durations; never goes backwards. */
  monotonic(): number;
  /** Resolves after `ms`, or rejects with the signal's reason as soon as it aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
  /** Uniform in [0, 1). */
  random(): number;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  monotonic: () => performance.now(),
  sleep: async (ms, signal) => {
    await delay(Math.max(0, ms), undefined, signal ? { signal } : undefined);
  },
  random: () => Math.random(),
};

/**
 * A clock for tests: time moves only when `advance` is called or when every sleeper would otherwise
 * wait (auto mode), so retries and timers resolve instantly and deterministically.
 */
export class ManualClock implements Clock {
  #now: number;
  #mono = 0;
  #sleepers: { until: number; resolve: () => void }[] = [];
  readonly sleeps: number[] = [];
  readonly #auto: boolean;
  #random: () => number;

  constructor(opts: { startMs?: number; auto?: boolean; random?: () => number } = {}) {
    this.#now = opts.startMs ?? Date.UTC(2026, 0, 1);
    this.#auto = opts.auto ?? true;
    this.#random = opts.random ?? (() => 0.5);
  }

  now(): number {
    return this.#now;
  }

  monotonic(): number {
    return this.#mono;
  }

  random(): number {
    return this.#random();
  }

  advance(ms: number): void {
    this.#now += ms;
    this.#mono += ms;
    const due = this.#sleepers.filter((s) => s.until <= this.#mono);
    this.#sleepers = this.#sleepers.filter((s) => s.until > this.#mono);
    for (const s of due) s.resolve();
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    this.sleeps.push(ms);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    if (this.#auto) {
      this.advance(Math.max(0, ms));
      return Promise.resolve();
    }
    return new Promise<void>((resolve, reject) => {
      const sleeper = { until: this.#mono + Math.max(0, ms), resolve };
      this.#sleepers.push(sleeper);
      signal?.addEventListener(
        "abort",
        () => {
          this.#sleepers = this.#sleepers.filter((s) => s !== sleeper);
          reject(signal.reason as Error);
        },
        { once: true },
      );
    });
  }
}

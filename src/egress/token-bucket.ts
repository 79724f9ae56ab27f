// One rate cap as a token bucket on the injected monotonic clock (spec B §5.7). Capacity is one second
// of rate and the bucket starts full; a request larger than the capacity waits only for a full bucket
// and then takes everything it needs, so the balance goes negative and later requests pay it back: an
// oversized batch is delayed, never refused, and the long-run rate still holds.
import type { Clock } from "../util/clock.ts";

export class TokenBucket {
  readonly #rate: number;
  readonly #clock: Clock;
  #tokens: number;
  #atMono: number;

  /** `ratePerSecond` > 0. */
  constructor(ratePerSecond: number, clock: Clock) {
    this.#rate = ratePerSecond;
    this.#clock = clock;
    this.#tokens = ratePerSecond;
    this.#atMono = clock.monotonic();
  }

  /** Milliseconds until `amount` (capped at one second of rate) is available; 0 when it is now. */
  waitMs(amount: number): number {
    this.#refill();
    const needed = Math.min(amount, this.#rate);
    // A shortfall of a few ulps is none: its sleep would be too short for the clock to move (a
    // ManualClock's float sum), and the gate would spin on it.
    if (this.#tokens >= needed - needed * 1e-9) return 0;
    return ((needed - this.#tokens) / this.#rate) * 1000;
  }

  /** Takes `amount` whole (the balance may go negative); call after waitMs() said 0. */
  take(amount: number): void {
    this.#refill();
    this.#tokens -= amount;
  }

  /** Tokens available now (negative while an oversized request is being paid back). */
  get tokens(): number {
    this.#refill();
    return this.#tokens;
  }

  #refill(): void {
    const now = this.#clock.monotonic();
    const elapsed = now - this.#atMono;
    if (elapsed <= 0) return;
    this.#atMono = now;
    this.#tokens = Math.min(this.#rate, this.#tokens + (elapsed / 1000) * this.#rate);
  }
}

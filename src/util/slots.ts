// A counted FIFO semaphore: at most `size` holders at once, the longest waiter served first. A lane's
// HTTP requests share one (#37), so an older batch's next request is never overtaken by a newer one's.
import { abortReason } from "./abortable.ts";

export class Slots {
  readonly size: number;
  #free: number;
  readonly #waiting: { grant: () => void }[] = [];

  constructor(size: number) {
    if (!Number.isInteger(size) || size < 1)
      throw new RangeError(`slots: size ${size} is not a positive integer`);
    this.size = size;
    this.#free = size;
  }

  /** Holders right now. */
  get held(): number {
    return this.size - this.#free;
  }

  /** Resolves with the slot's release once one is free; rejects with the signal's reason if it aborts first. */
  take(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(abortReason(signal));
    if (this.#free > 0 && this.#waiting.length === 0) {
      this.#free--;
      return Promise.resolve(this.#release());
    }
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        const i = this.#waiting.indexOf(waiter);
        if (i >= 0) this.#waiting.splice(i, 1);
        reject(abortReason(signal!));
      };
      const waiter = {
        grant: () => {
          signal?.removeEventListener("abort", onAbort);
          resolve(this.#release());
        },
      };
      this.#waiting.push(waiter);
      signal?.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** A release that frees its slot once, handing it straight to the longest waiter. */
  #release(): () => void {
    let done = false;
    return () => {
      if (done) return;
      done = true;
      const next = this.#waiting.shift();
      if (next) next.grant();
      else this.#free++;
    };
  }
}

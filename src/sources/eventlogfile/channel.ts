// The bridge between EventLogFile type workers and the source's stream: a small bounded FIFO (a slow
// consumer stalls every worker before its next Salesforce call) and a semaphore for `concurrency`.
// A blocked `put` or `acquire` throws the run's abort reason when the run is cancelled.
import { abortReason } from "../../util/abortable.ts";

export class Channel<T> implements AsyncIterable<T> {
  readonly #capacity: number;
  #items: T[] = [];
  #closed = false;
  #error: Error | undefined;
  #putWaiters: (() => void)[] = [];
  #takeWaiter: (() => void) | undefined;

  constructor(capacity: number) {
    this.#capacity = Math.max(1, capacity);
  }

  get #size(): number {
    return this.#items.length;
  }

  /** Undefined when the item went straight in; otherwise a promise that settles once it did. */
  put(item: T, signal: AbortSignal): Promise<void> | undefined {
    if (signal.aborted) return Promise.reject(abortReason(signal));
    if (this.#size < this.#capacity) {
      this.#items.push(item);
      this.#wakeTaker();
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const onAbort = (): void => {
        this.#putWaiters = this.#putWaiters.filter((w) => w !== retry);
        reject(abortReason(signal));
      };
      const retry = (): void => {
        signal.removeEventListener("abort", onAbort);
        const again = this.put(item, signal);
        if (again) again.then(resolve, reject);
        else resolve();
      };
      this.#putWaiters.push(retry);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  /** No more puts; the iterator ends after the buffered items, throwing `error` if one is given. */
  close(error?: Error): void {
    this.#closed = true;
    this.#error = error;
    this.#wakeTaker();
  }

  #wakeTaker(): void {
    const w = this.#takeWaiter;
    this.#takeWaiter = undefined;
    w?.();
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for (;;) {
      while (this.#size > 0) {
        // The queue holds a handful of items, so shift() is cheap and releases each one at once.
        const item = this.#items.shift()!;
        this.#putWaiters.shift()?.();
        yield item;
      }
      if (this.#closed) {
        if (this.#error !== undefined) throw this.#error;
        return;
      }
      await new Promise<void>((resolve) => (this.#takeWaiter = resolve));
    }
  }
}

export class Semaphore {
  #free: number;
  #waiters: (() => void)[] = [];

  constructor(permits: number) {
    this.#free = Math.max(1, permits);
  }

  async acquire(signal: AbortSignal): Promise<void> {
    if (signal.aborted) throw abortReason(signal);
    if (this.#free > 0) {
      this.#free--;
      return;
    }
    await new Promise<void>((resolve, reject) => {
      const grant = (): void => {
        signal.removeEventListener("abort", onAbort);
        resolve();
      };
      const onAbort = (): void => {
        this.#waiters = this.#waiters.filter((w) => w !== grant);
        reject(abortReason(signal));
      };
      this.#waiters.push(grant);
      signal.addEventListener("abort", onAbort, { once: true });
    });
  }

  release(): void {
    const next = this.#waiters.shift();
    if (next) next();
    else this.#free++;
  }
}

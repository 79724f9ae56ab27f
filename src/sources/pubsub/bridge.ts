// The bounded FIFO between the per-topic tasks and `events()` (§4.5): at most `maxEntries` entries
// and (when maxBytes > 0) about `maxBytes` of line bytes. A full bridge blocks producers, so they
// stop pulling from their streams and no credits are requested: that is the backpressure path.
import type { LogEntry } from "../../model.ts";

/** What a real entry costs against the byte budget: its line plus a fixed overhead. */
export const ENTRY_OVERHEAD_BYTES = 64;

type Item = { entry: LogEntry; cost: number } | { sentinel: true };

export class Bridge {
  readonly #maxEntries: number;
  readonly #maxBytes: number;
  #items: Item[] = [];
  #head = 0;
  #entries = 0;
  #bytes = 0;
  #spaceWaiters: (() => void)[] = [];
  #itemWaiter: (() => void) | undefined;

  constructor(maxEntries: number, maxBytes: number) {
    this.#maxEntries = maxEntries;
    this.#maxBytes = maxBytes;
  }

  get size(): number {
    return this.#entries;
  }

  get bytes(): number {
    return this.#bytes;
  }

  #full(): boolean {
    return this.#entries >= this.#maxEntries || (this.#maxBytes > 0 && this.#bytes >= this.#maxBytes);
  }

  /** Waits for room (a single entry may overshoot the byte budget, so a huge one cannot deadlock). */
  async put(entry: LogEntry, signal: AbortSignal): Promise<void> {
    while (this.#full()) {
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        const onAbort = (): void => {
          this.#spaceWaiters = this.#spaceWaiters.filter((w) => w !== wake);
          reject(signal.reason as Error);
        };
        this.#spaceWaiters.push(wake);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
    const cost = entry.checkpointOnly ? 0 : entry.lineBytes + ENTRY_OVERHEAD_BYTES;
    this.#entries++;
    this.#bytes += cost;
    this.#push({ entry, cost });
  }

  /** A producer's end marker; never blocks, so a finishing task cannot hang shutdown. */
  sentinel(): void {
    this.#push({ sentinel: true });
  }

  #push(item: Item): void {
    this.#items.push(item);
    const waiter = this.#itemWaiter;
    this.#itemWaiter = undefined;
    waiter?.();
  }

  /**
   * The entries queued in a row, oldest first and at most `max` of them, or null for a sentinel.
   * Waits when the bridge is empty. A run stops before a sentinel, so a producer's end marker is
   * never passed over. One consumer only.
   */
  async takeRun(signal: AbortSignal, max: number): Promise<LogEntry[] | null> {
    while (this.#head >= this.#items.length) {
      signal.throwIfAborted();
      await new Promise<void>((resolve, reject) => {
        const onAbort = (): void => {
          this.#itemWaiter = undefined;
          reject(signal.reason as Error);
        };
        this.#itemWaiter = () => {
          signal.removeEventListener("abort", onAbort);
          resolve();
        };
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
    let run: LogEntry[] | null = null;
    if ("sentinel" in this.#items[this.#head]!) this.#head++;
    else {
      run = [];
      while (run.length < max && this.#head < this.#items.length) {
        const item = this.#items[this.#head]!;
        if ("sentinel" in item) break;
        this.#head++;
        this.#entries--;
        this.#bytes -= item.cost;
        run.push(item.entry);
      }
    }
    if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items = this.#items.slice(this.#head);
      this.#head = 0;
    }
    const waiters = this.#spaceWaiters;
    if (waiters.length > 0 && !this.#full()) {
      this.#spaceWaiters = [];
      for (const w of waiters) w();
    }
    return run;
  }

  /** Releases everything still queued (teardown), waking blocked producers. */
  clear(): void {
    this.#items = [];
    this.#head = 0;
    this.#entries = 0;
    this.#bytes = 0;
    const waiters = this.#spaceWaiters;
    this.#spaceWaiters = [];
    for (const w of waiters) w();
  }
}

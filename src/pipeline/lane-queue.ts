// One lane's queue, bounded by entry count and by bytes (spec B §2.5). A ring buffer with the cost of
// each slot stored beside it, so the release at dequeue subtracts exactly what admission charged.
// Nothing is allocated per entry unless a producer or the consumer actually has to wait.
import type { LogEntry } from "../model.ts";
import { Waiters } from "./waiters.ts";

/** Queued by a producer when it finishes; costs nothing and is never byte-charged. */
export const END_OF_STREAM: unique symbol = Symbol("end-of-stream");
export type QueueItem = LogEntry | typeof END_OF_STREAM;

export class LaneQueue {
  readonly #items: (QueueItem | undefined)[];
  readonly #costs: Float64Array;
  readonly #capacity: number;
  readonly #maxBytes: number;
  #head = 0;
  #size = 0;
  #bytes = 0;
  readonly #producers = new Waiters();
  #consumer: (() => void) | undefined;
  #wakeScheduled = false;
  #cancelled = false;

  /** `maxBytes` 0 disables byte admission (bytes are still tallied for status). */
  constructor(capacity: number, maxBytes: number) {
    this.#capacity = capacity;
    this.#maxBytes = maxBytes;
    this.#items = new Array<QueueItem | undefined>(capacity).fill(undefined);
    this.#costs = new Float64Array(capacity);
  }

  /** Items queued, end-of-stream markers and checkpoint-only tokens included. */
  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Enqueues when there is a free slot and, for a costed item, the lane's bytes are strictly below
   * the budget; the full cost is then added, so one entry may overshoot (never deadlocks on a
   * single entry larger than the whole budget).
   */
  tryPut(item: QueueItem, cost: number): boolean {
    if (this.#size >= this.#capacity || this.#cancelled) return false;
    if (cost > 0 && this.#maxBytes > 0 && this.#bytes >= this.#maxBytes) return false;
    let tail = this.#head + this.#size;
    if (tail >= this.#capacity) tail -= this.#capacity;
    this.#items[tail] = item;
    this.#costs[tail] = cost;
    this.#size++;
    this.#bytes += cost;
    if (this.#consumer !== undefined && !this.#wakeScheduled) {
      // Deferred past the producer's microtask run, so a flooding source fills a chunk before
      // the consumer wakes once, instead of both sides ping-ponging per entry.
      this.#wakeScheduled = true;
      setImmediate(this.wakeConsumer);
    }
    return true;
  }

  /** tryPut, waiting for room as long as needed. Cancellation-safe: nothing is charged until admitted. */
  async put(item: QueueItem, cost: number, signal?: AbortSignal): Promise<void> {
    while (!this.tryPut(item, cost)) await this.#producers.wait(signal);
  }

  /** The oldest item, its cost released and waiting producers woken; undefined when empty. */
  take(): QueueItem | undefined {
    if (this.#size === 0) return undefined;
    const head = this.#head;
    const item = this.#items[head];
    this.#items[head] = undefined;
    this.#bytes -= this.#costs[head]!;
    this.#head = head + 1 === this.#capacity ? 0 : head + 1;
    this.#size--;
    if (this.#producers.size > 0) this.#producers.wakeAll();
    return item;
  }

  /** Resolves after the next put, wakeConsumer() or cancel(). One consumer per queue. */
  waitForItem(): Promise<void> {
    if (this.#size > 0 || this.#cancelled) return Promise.resolve();
    return new Promise<void>((resolve) => (this.#consumer = resolve));
  }

  readonly wakeConsumer = (): void => {
    this.#wakeScheduled = false;
    const wake = this.#consumer;
    this.#consumer = undefined;
    wake?.();
  };

  /**
   * Rejects waiting and future producers with `reason`, wakes the consumer, refuses new items, and drops
   * what is queued: a cancelled lane never takes it (count it with queuedEntries() first).
   */
  cancel(reason: Error): void {
    this.#cancelled = true;
    this.#items.fill(undefined);
    this.#costs.fill(0);
    this.#head = 0;
    this.#size = 0;
    this.#bytes = 0;
    this.#producers.fail(reason);
    this.wakeConsumer();
  }

  /** The entries still queued, oldest first (for abandonment accounting; not a hot path). */
  queuedEntries(): LogEntry[] {
    const out: LogEntry[] = [];
    for (let i = 0; i < this.#size; i++) {
      const item = this.#items[(this.#head + i) % this.#capacity];
      if (item !== undefined && item !== END_OF_STREAM) out.push(item);
    }
    return out;
  }
}

// The two rate caps (lines/s, bytes/s) shared by the lanes. Pushes wait in one queue per lane and only
// the head of the line may take tokens: the streaming lane's head always goes first, so a bulk
// EventLogFile drain that keeps the bulk queue full never delays a live Pub/Sub batch by more than the
// batch already holding the tokens. A waiting push holds its lane's in-flight slot, which holds the
// lane's queue and through it the source: the delay is backpressure, never buffered memory.
import type { Clock } from "../util/clock.ts";
import { Waiters } from "../pipeline/waiters.ts";
import { TokenBucket } from "./token-bucket.ts";

export type EgressLane = "streaming" | "bulk";

interface Waiter {
  readonly lines: number;
  readonly bytes: number;
}

/** The sources' lane rule (pipeline laneOf) read off a batch: Pub/Sub entries are the streaming lane. */
export function laneOfBatch(batch: readonly { labels: { source?: string } }[]): EgressLane {
  return batch[0]?.labels.source === "pubsub" ? "streaming" : "bulk";
}

export class RateGate {
  readonly #clock: Clock;
  readonly #lines: TokenBucket | undefined;
  #bytes: TokenBucket | undefined;
  readonly #queues: Record<EgressLane, Waiter[]> = { streaming: [], bulk: [] };
  readonly #changed = new Waiters();
  /** Aborted to cut the head's sleep short when a streaming push arrives behind a bulk head. */
  #poke = new AbortController();

  /** A cap of 0 is off. */
  constructor(caps: { linesPerSecond: number; bytesPerSecond: number }, clock: Clock) {
    this.#clock = clock;
    this.#lines = caps.linesPerSecond > 0 ? new TokenBucket(caps.linesPerSecond, clock) : undefined;
    this.#bytes = caps.bytesPerSecond > 0 ? new TokenBucket(caps.bytesPerSecond, clock) : undefined;
  }

  /**
   * A new bytes cap from now on (0: off), for a cap learned at run time (Loki's stated tenant limit).
   * `empty` starts it with no tokens: the far side just said its own bucket is spent.
   */
  setBytesPerSecond(rate: number, empty: boolean): void {
    const bucket = rate > 0 ? new TokenBucket(rate, this.#clock) : undefined;
    if (bucket && empty) bucket.take(bucket.tokens);
    this.#bytes = bucket;
    this.#wake();
  }

  get waiting(): number {
    return this.#queues.streaming.length + this.#queues.bulk.length;
  }

  /**
   * Waits until the caps allow `lines` and `bytes`, then takes them. Returns the ms waited. Rejects with
   * the signal's reason when it aborts first, having taken nothing.
   */
  async acquire(lines: number, bytes: number, lane: EgressLane, signal?: AbortSignal): Promise<number> {
    // The common case when the caps are not binding: nobody queued and tokens at hand. No queue
    // entry, no wake-ups (bench/egress.ts measures this path).
    if (this.waiting === 0 && this.#waitMs(lines, bytes) <= 0) {
      this.#take(lines, bytes);
      return 0;
    }
    const started = this.#clock.monotonic();
    const me: Waiter = { lines, bytes };
    const queue = this.#queues[lane];
    queue.push(me);
    // A streaming arrival preempts a bulk head that is sleeping for its tokens.
    if (lane === "streaming" && this.#queues.bulk.length > 0) this.#wake();
    try {
      for (;;) {
        if (this.#head() !== me) {
          await this.#changed.wait(signal);
          continue;
        }
        const waitMs = this.#waitMs(lines, bytes);
        if (waitMs <= 0) {
          this.#take(lines, bytes);
          return this.#clock.monotonic() - started;
        }
        await this.#sleep(waitMs, signal);
      }
    } finally {
      queue.splice(queue.indexOf(me), 1);
      this.#wake();
    }
  }

  #waitMs(lines: number, bytes: number): number {
    return Math.max(this.#lines?.waitMs(lines) ?? 0, this.#bytes?.waitMs(bytes) ?? 0);
  }

  #take(lines: number, bytes: number): void {
    this.#lines?.take(lines);
    this.#bytes?.take(bytes);
  }

  #head(): Waiter | undefined {
    return this.#queues.streaming[0] ?? this.#queues.bulk[0];
  }

  #wake(): void {
    const poke = this.#poke;
    this.#poke = new AbortController();
    poke.abort();
    this.#changed.wakeAll();
  }

  /** Sleeps `ms` (bounded by the bucket's refill time), cut short by a poke; rethrows only `signal`. */
  async #sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
    const poke = this.#poke.signal;
    try {
      await this.#clock.sleep(ms, signal ? AbortSignal.any([signal, poke]) : poke);
    } catch (err) {
      if (signal?.aborted) throw err;
      if (!poke.aborted) throw err;
    }
  }
}

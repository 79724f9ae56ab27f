// The ordered commit window of one lane. Up to `maxInFlight` batches may be pushing (handed to the
// sink, not answered yet) and up to `maxUncommitted` may be outstanding in all, the rest delivered and
// waiting for their checkpoint write; commits are applied strictly in batch order, so a batch that is
// still retrying holds back every commit behind it, and a full window holds back the consumer (and
// through the queue, the sources). Batches that are settled together at the head of the window are
// written in one commitMany: fewer store writes, same order, later values win.
//
// Why two bounds: a store write takes its own time (two fsyncs for a file, a PUT for an object store).
// With one bound for both, a lane could push only `maxInFlight` batches per push-and-write round trip:
// a 1M-row EventLogFile drain sat idle ~13 % of its time waiting for its checkpoint writes. A delivered
// batch holds only its checkpoints (its entries are let go on delivery), so the delivered part costs no
// memory; it is bounded so that a store outage still stops the lane, and what a crash re-delivers stays
// at most `maxUncommitted` batches.
//
// A store outage of any length never ends the run: the batches stay held (and through the full window,
// the sources wait), and the write is retried with backoff from a fresh read until the store answers.
// Only a fence (another replica leads now) or a real second writer ends it.
import { describeError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import {
  StateFenceError,
  StateFileLockError,
  StateStoreConflictError,
  StateWriteUnverifiedError,
} from "../state/errors.ts";
import type { CheckpointStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { retry, type RetryPolicy } from "../util/retry.ts";
import type { AbandonedKeys } from "./abandoned.ts";
import type { PendingBatch } from "./batch.ts";
import { Waiters } from "./waiters.ts";

/** 1 s doubling to 30 s, for as long as it takes. */
const STORE_RETRY: RetryPolicy = {
  maxAttempts: Number.POSITIVE_INFINITY,
  backoffMs: (attempt) => Math.min(30_000, 1000 * 2 ** (attempt - 1)),
};
/** Failed writes are logged on the first attempt and every this-many after. */
const WARN_EVERY = 10;

/** What no retry can fix: another replica leads, or another process writes the same state. */
function endsTheRun(err: unknown): boolean {
  if (err instanceof StateFenceError || err instanceof StateFileLockError) return true;
  return err instanceof StateStoreConflictError && !(err instanceof StateWriteUnverifiedError);
}

export interface CommitterDeps {
  store: CheckpointStore;
  clock: Clock;
  logger: Logger;
  abandoned: AbandonedKeys;
  /** Batches pushing at once. */
  maxInFlight: number;
  /** Batches outstanding at once, pushing or delivered and waiting for their write; >= maxInFlight. */
  maxUncommitted: number;
  /** After each successful store write, with exactly what was written. */
  onCommitted: (commits: ReadonlyMap<string, string>) => void;
  /** A store write failed in a way no retry can fix: the run must stop (spec B §2.10). */
  onError: (err: unknown) => void;
  /** Every store write attempt (the watchdog's sign of life). */
  onAttempt?: () => void;
}

export class OrderedCommitter {
  readonly #deps: CommitterDeps;
  readonly #window: PendingBatch[] = [];
  readonly #changed = new Waiters();
  /** How many batches at the head are part of the store write in progress. */
  #writing = 0;
  #cancelled = false;
  readonly #stop = new AbortController();

  constructor(deps: CommitterDeps) {
    this.#deps = deps;
  }

  get outstanding(): readonly PendingBatch[] {
    return this.#window;
  }

  /** Waits for a free push slot (and room behind the delivered ones), then appends `batch`. */
  async admit(batch: PendingBatch): Promise<void> {
    while (this.#full()) await this.#changed.wait();
    this.#window.push(batch);
  }

  #full(): boolean {
    if (this.#window.length >= this.#deps.maxUncommitted) return true;
    let pushing = 0;
    for (const batch of this.#window) if (batch.state === "pushing") pushing++;
    return pushing >= this.#deps.maxInFlight;
  }

  /** The batch's push ended; commit it (or record its abandonment) once everything ahead is done. */
  settle(batch: PendingBatch, state: "ready" | "abandoned"): void {
    batch.state = state;
    if (state === "ready") batch.delivered();
    // A push slot is free even if the commit has to wait for an earlier batch or the store.
    this.#changed.wakeAll();
    if (this.#writing === 0 && this.#window[0] === batch) {
      this.#drain().catch((err: unknown) => {
        this.#deps.onError(err);
      });
    }
  }

  /** Resolves at the next change of the window (a batch settled or committed); rejects on cancel. */
  changed(): Promise<void> {
    return this.#changed.wait();
  }

  /** Resolves when every admitted batch is committed or abandoned. */
  async drained(): Promise<void> {
    while (this.#window.length > 0) await this.#changed.wait();
  }

  /** Stops committing and rejects anyone waiting; a store write already started runs to its end. */
  cancel(reason: Error): void {
    this.#cancelled = true;
    this.#stop.abort(reason);
    // Nothing behind the write in progress can commit any more; keeping it would hold the batch
    // (and its bytes) until the next run.
    this.#window.splice(this.#writing);
    this.#changed.fail(reason);
  }

  /** Outstanding batches that no store write in progress covers (for a forced teardown). */
  uncommitted(): readonly PendingBatch[] {
    return this.#window.slice(this.#writing);
  }

  async #drain(): Promise<void> {
    const { abandoned, store } = this.#deps;
    while (!this.#cancelled) {
      let n = 0;
      const merged = new Map<string, string>();
      for (const batch of this.#window) {
        if (batch.state === "pushing") break;
        n++;
        if (batch.state === "abandoned") {
          abandoned.add(batch.commits.keys(), batch.entries, "Shutdown drain abandoned a batch");
          continue;
        }
        for (const [key, value] of batch.commits) if (!abandoned.has(key)) merged.set(key, value);
      }
      if (n === 0) return;
      if (merged.size > 0) {
        this.#writing = n;
        try {
          await this.#write(store, Object.fromEntries(merged), n);
        } finally {
          this.#writing = 0;
        }
        // Reported even if the run was torn down meanwhile: the write did happen.
        this.#deps.onCommitted(merged);
      }
      this.#window.splice(0, n);
      this.#changed.wakeAll();
    }
  }

  async #write(store: CheckpointStore, items: Record<string, string>, batches: number): Promise<void> {
    const { clock, logger, onAttempt } = this.#deps;
    await retry(
      () => {
        onAttempt?.();
        return store.commitMany(items);
      },
      {
        policy: STORE_RETRY,
        clock,
        signal: this.#stop.signal,
        isTransient: (err) => !endsTheRun(err),
        onRetry: (err, attempt, delayMs) => {
          // The failed write may have landed without its answer: start the next one from a fresh read.
          store.reset();
          if (attempt === 1 || attempt % WARN_EVERY === 0) {
            logger.warn(
              { location: store.location, attempt, retry_in_ms: delayMs, batches, err: describeError(err) },
              "checkpoint store write failed; holding the delivered batches and retrying (nothing is " +
                "lost; the sources wait while the window is full): check that the store is reachable",
            );
          }
        },
      },
    );
  }
}

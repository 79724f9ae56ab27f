// The pipeline's dead-letter sink: turns a refused group into records and appends them to the store.
// A failed write is retried a few times with backoff (about 3.5 s of waiting at most), all within a
// 15 s deadline, then given up on with one ERROR naming the entry count and a counted failure: the
// push it belongs to must not hold its lane for long, and the daemon never crashes over a dead letter. Under HA the write runs
// behind the checkpoint store's fence: a replica whose term ended keeps nothing (the new leader
// re-reads those entries from the last checkpoint, is refused again, and keeps them itself).
import type { Meter } from "@opentelemetry/api";
import { describeError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import type { DeadLetterGroup, DeadLetterSink } from "../pipeline/dead-letters.ts";
import { StateFenceError } from "../state/errors.ts";
import type { Clock } from "../util/clock.ts";
import { fullJitter, retry, type RetryPolicy } from "../util/retry.ts";
import { DeadLetterStoreError } from "./errors.ts";
import { DeadLetterMetrics } from "./metrics.ts";
import { toRecords } from "./record.ts";
import type { DeadLetterStore } from "./types.ts";

export const KEEP_RETRY: RetryPolicy = { maxAttempts: 4, backoffMs: fullJitter(500, 2000) };
/** Longest one group may hold its push, retries included: a store that hangs must not stall the lane. */
export const KEEP_DEADLINE_MS = 15_000;

/** Starts a deadline; returns its cancel. */
export type StartDeadline = (ms: number, onExpiry: () => void) => () => void;

/**
 * Real time by default: the deadline must hold even where a test's manual clock stands still, and it
 * is a safety net no test waits for (tests inject one they fire by hand).
 */
const realDeadline: StartDeadline = (ms, onExpiry) => {
  const timer = setTimeout(onExpiry, ms);
  timer.unref();
  return () => {
    clearTimeout(timer);
  };
};

export interface KeeperOptions {
  store: DeadLetterStore;
  clock: Clock;
  logger: Logger;
  meter: Meter;
  /** HA: throws StateFenceError once this replica may no longer write (checked before every attempt). */
  fence?: () => void | Promise<void>;
  /** How the KEEP_DEADLINE_MS deadline is timed (tests fire it by hand). */
  deadline?: StartDeadline;
}

export class DeadLetterKeeper implements DeadLetterSink {
  readonly store: DeadLetterStore;
  readonly #opts: KeeperOptions;
  readonly #log: Logger;
  readonly #metrics: DeadLetterMetrics;

  constructor(opts: KeeperOptions) {
    this.#opts = opts;
    this.store = opts.store;
    this.#log = opts.logger.child({ component: "deadletter" });
    this.#metrics = new DeadLetterMetrics(opts.meter, () => opts.store.usage());
  }

  /** For /statusz: where the letters are and, once known, how many this process saw held. */
  status(): Record<string, unknown> {
    const usage = this.store.usage();
    return {
      enabled: true,
      location: this.store.location,
      held_entries: usage?.entries ?? null,
      held_bytes: usage?.bytes ?? null,
    };
  }

  /**
   * A leadership term's first look at the store: fills the held gauges and says, once, that letters
   * are waiting. Never rejects; a store that cannot be read now is a WARN (the next write retries).
   */
  async survey(signal: AbortSignal): Promise<void> {
    const { store } = this.#opts;
    try {
      const usage = await store.refresh(signal);
      if (usage.entries > 0) {
        this.#log.info(
          { held_entries: usage.entries, held_bytes: usage.bytes, location: store.location },
          "dead letters are waiting: 'sf2loki deadletter list' shows them, 'replay' sends them again",
        );
      }
    } catch (err) {
      if (signal.aborted) return;
      this.#log.warn(
        { location: store.location, err: describeError(err) },
        "could not read the dead-letter store; its gauges stay empty until the next dead letter is written",
      );
    }
  }

  keep(group: DeadLetterGroup, signal: AbortSignal): Promise<void> {
    return this.#keep(group, signal, this.#opts.fence);
  }

  /**
   * The same keeper without the leadership fence, for `sf2loki backfill`: it takes no lease, and the
   * letters it keeps (their own objects, or appends under the directory lock) never collide with the
   * leader's.
   */
  unfenced(): DeadLetterSink {
    return { keep: (group, signal) => this.#keep(group, signal, undefined) };
  }

  async #keep(group: DeadLetterGroup, signal: AbortSignal, fence: KeeperOptions["fence"]): Promise<void> {
    const { store, clock } = this.#opts;
    const records = toRecords(group, clock);
    const entries = records.length;
    if (entries === 0) return;
    const expired = new AbortController();
    const bounded = AbortSignal.any([signal, expired.signal]);
    const cancelDeadline = (this.#opts.deadline ?? realDeadline)(KEEP_DEADLINE_MS, () => {
      expired.abort(
        new DeadLetterStoreError(`the dead-letter store did not answer within ${KEEP_DEADLINE_MS / 1000} s`),
      );
    });
    try {
      const writing = retry(
        async () => {
          await fence?.();
          return store.append(records, bounded);
        },
        {
          policy: KEEP_RETRY,
          clock,
          signal: bounded,
          isTransient: (err) => !(err instanceof StateFenceError),
          onRetry: (err, attempt, delayMs) => {
            this.#log.warn(
              {
                entries,
                attempt,
                retry_in_ms: Math.round(delayMs),
                location: store.location,
                err: describeError(err),
              },
              "dead-letter write failed; retrying",
            );
          },
        },
      );
      // A backend call that ignores the signal still stops holding the push at the deadline (and its
      // late failure, if any, has nobody left to tell).
      writing.catch(() => undefined);
      const outcome = await Promise.race([writing, rejectOnAbort(bounded)]);
      this.#metrics.written.add(entries, { reason: group.reason });
      if (outcome.evicted > 0) {
        this.#metrics.evicted.add(outcome.evicted);
        this.#log.warn(
          { evicted: outcome.evicted, held_entries: outcome.usage.entries, held_bytes: outcome.usage.bytes },
          "the dead-letter store is at its bound; the oldest letters were evicted: replay or purge them " +
            "(sf2loki deadletter), or raise deadletter.max_bytes / max_entries",
        );
      }
    } catch (err) {
      if (signal.aborted) {
        // The run was torn down: the push reports its batch abandoned, so these are read again.
        this.#log.warn({ entries, reason: group.reason }, "not keeping dead letters: the run was cancelled");
        return;
      }
      if (err instanceof StateFenceError) {
        this.#log.warn(
          { entries, reason: group.reason },
          "not keeping dead letters: this replica's leadership term ended; the new leader re-reads these entries",
        );
        return;
      }
      this.#metrics.writeFailures.add(1);
      this.#log.error(
        { entries, reason: group.reason, location: store.location, err: describeError(err) },
        `could not keep ${entries} refused entries in the dead-letter store ${store.location} ` +
          `(${KEEP_RETRY.maxAttempts} attempts within ${KEEP_DEADLINE_MS / 1000} s at most); they are lost ` +
          "and the checkpoint moves on: check that the store is writable (disk space, permissions, credentials)",
      );
    } finally {
      cancelDeadline();
    }
  }
}

function rejectOnAbort(signal: AbortSignal): Promise<never> {
  return new Promise<never>((_, reject) => {
    const fail = (): void => {
      reject(signal.reason as Error);
    };
    if (signal.aborted) fail();
    else signal.addEventListener("abort", fail, { once: true });
  });
}

// Pushing one batch (spec B §2.7): retry a retryable failure forever with 1 s doubling backoff capped
// at 30 s (a server's Retry-After wins up to 60 s); a permanent refusal drops and counts; anything
// else is a crash. Entries refused for good (budget drops excepted) go to the dead-letter sink before
// the push resolves, so the checkpoint moves past them only once they are kept. Once the run is stopping, a batch gets one attempt and is abandoned on its first
// retryable failure; once it is cancelled, the push is aborted and the batch abandoned.
import type { Clock } from "../util/clock.ts";
import type { Logger } from "../obs/logger.ts";
import { retry, type RetryPolicy } from "../util/retry.ts";
import type { LogEntry } from "../model.ts";
import {
  PermanentSinkError,
  RetryableSinkError,
  type DroppedEntries,
  type PushResult,
  type RequestSlots,
  type Sink,
} from "../sinks/sink.ts";
import { describeError } from "../errors.ts";
import type { PendingBatch } from "./batch.ts";
import type { DeadLetterSink } from "./dead-letters.ts";
import { countDropped } from "./drops.ts";
import { PUSH_RETRIED, PUSH_SUCCESS, type PipelineMetrics } from "./metrics.ts";
import { isAbortFrom } from "./abort.ts";
import type { Reconciler } from "./reconcile.ts";
import type { RefusalLog } from "./refusal-log.ts";

const BACKOFF_BASE_MS = 1000;
const BACKOFF_CAP_MS = 30_000;
const RETRY_AFTER_CAP_MS = 60_000;
/** Retryable failures are logged on the first attempt and every this-many after (QUIRK §2.7). */
const WARN_EVERY = 10;

const POLICY: RetryPolicy = {
  maxAttempts: Number.POSITIVE_INFINITY,
  backoffMs: (attempt) => Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** (attempt - 1)),
};

export type PushOutcome = "delivered" | "dropped" | "abandoned";

export interface PushDeps {
  sink: Sink;
  clock: Clock;
  metrics: PipelineMetrics;
  logger: Logger;
  /** Aborts when the run stops or is cancelled: no more retries, no more backoff waits. */
  draining: AbortSignal;
  /** Aborts only when the run is torn down: the push itself is cancelled. */
  cancelled: AbortSignal;
  /** Every push attempt (the watchdog's sign of progress). */
  onAttempt?: () => void;
  /** Where entries refused for good are kept; none: they are only counted and logged. */
  deadLetters?: DeadLetterSink;
  /** Logs what was refused, one line per batch and reason, rate-limited. */
  refusals: RefusalLog;
  /** Asks Loki whether entries refused as too far behind are stored anyway; none: they are refusals. */
  reconciler?: Pick<Reconciler, "holdsAnyway">;
}

/** A budget drop is the operator's choice (`budget_action: drop`), not Loki's refusal: never kept. */
const BUDGET = "budget";
const TOO_FAR_BEHIND = "too_far_behind";

/**
 * Pushes `batch` until it is delivered, refused for good or abandoned. `slots` are the lane's: every
 * request the sink sends for it holds one while open (#37).
 */
export async function pushBatch(
  batch: PendingBatch,
  deps: PushDeps,
  slots?: RequestSlots,
): Promise<PushOutcome> {
  const { sink, clock, metrics, logger } = deps;
  // Drops are counted the moment the sink reports them (a push isolating refused entries can take
  // a while), once per entry however often a retried push reports the same entry again.
  const counted = new Set<LogEntry>();
  // What to keep once the batch is settled for good (delivered, or refused whole); an abandoned batch
  // keeps nothing: its entries are read again, refused again and kept then.
  const refused: DroppedEntries[] = [];
  // Refused as too far behind: maybe a re-send of what Loki holds. Decided by a lookup at the end.
  const behind: LogEntry[] = [];
  const verify = deps.reconciler !== undefined;
  const countOnce = (group: DroppedEntries): void => {
    const fresh = group.entries.filter((e) => !counted.has(e));
    if (fresh.length === 0) return;
    for (const e of fresh) counted.add(e);
    if (verify && group.reason === TOO_FAR_BEHIND) {
      behind.push(...fresh);
      return;
    }
    countDropped(metrics.dropped, fresh, group.reason);
    // A budget drop is the operator's choice (budget_action: drop); the governor logs it, rate-limited.
    if (group.reason === BUDGET) return;
    refused.push({ entries: fresh, reason: group.reason, ...(group.detail ? { detail: group.detail } : {}) });
  };
  // Entries Loki stored while the rest of an attempt stayed open: a retry does not send them again.
  const landed = new Set<LogEntry>();
  const onLanded = (entries: readonly LogEntry[]): void => {
    for (const e of entries) landed.add(e);
  };
  let result: PushResult;
  try {
    result = await retry(
      async () => {
        deps.onAttempt?.();
        const started = clock.monotonic();
        const open = landed.size + counted.size === 0 ? batch.pushView : stillOpen(batch, landed, counted);
        if (open.length === 0) return { dropped: [] };
        try {
          const res = await sink.push(open, deps.cancelled, countOnce, onLanded, slots);
          metrics.pushDuration.record((clock.monotonic() - started) / 1000);
          return res;
        } catch (err) {
          if (err instanceof RetryableSinkError) {
            metrics.push.add(1, PUSH_RETRIED);
            batch.failingSince ??= { monoMs: clock.monotonic(), wallMs: clock.now() };
          }
          throw err;
        }
      },
      {
        policy: POLICY,
        clock,
        signal: deps.draining,
        isTransient: (err) => err instanceof RetryableSinkError,
        retryAfterMs: (err) =>
          err instanceof RetryableSinkError && err.retryAfterMs !== undefined
            ? Math.min(err.retryAfterMs, RETRY_AFTER_CAP_MS)
            : undefined,
        onRetry: (err, attempt, delayMs) => {
          if (attempt === 1 || attempt % WARN_EVERY === 0) {
            logger.warn(
              { entries: batch.pushView.length, attempt, retry_in_ms: delayMs, err: describeError(err) },
              "Loki push failed; retrying with backoff and holding this lane's checkpoints until it " +
                `succeeds: ${retryHint(err)}`,
            );
          }
        },
      },
    );
  } catch (err) {
    if (deps.cancelled.aborted) return "abandoned";
    if (err instanceof PermanentSinkError) {
      batch.failingSince = undefined;
      const rest = batch.pushView.filter((e) => !counted.has(e) && !landed.has(e));
      countDropped(metrics.dropped, rest, err.reason);
      // A budget drop is the operator's choice (budget_action: drop): counted, never kept.
      if (err.reason !== BUDGET && rest.length > 0)
        refused.push({ entries: rest, reason: err.reason, detail: err.message });
      if (!(await settleBehind(behind, refused, deps))) return "abandoned";
      tellRefused(refused, deps);
      return (await keepRefused(refused, deps)) ? "dropped" : "abandoned";
    }
    if (err instanceof RetryableSinkError || isAbortFrom(err, deps.draining)) return "abandoned";
    throw err;
  }
  batch.failingSince = undefined;
  metrics.push.add(1, PUSH_SUCCESS);
  metrics.lastPushSuccess.set(clock.now() / 1000);
  for (const group of result.dropped) countOnce(group);
  if (!(await settleBehind(behind, refused, deps))) return "abandoned";
  tellRefused(refused, deps);
  // Torn down while keeping them: no commit past entries that may not have been kept.
  if (!(await keepRefused(refused, deps))) return "abandoned";
  if (logger.isLevelEnabled("debug")) logger.debug({ entries: batch.pushView.length }, "pushed batch");
  return "delivered";
}

/**
 * Entries refused as too far behind that Loki holds anyway were a re-send of stored ones: delivered,
 * not dead letters. The rest are refusals like any other. False when the run was torn down meanwhile.
 */
async function settleBehind(behind: LogEntry[], refused: DroppedEntries[], deps: PushDeps): Promise<boolean> {
  if (behind.length === 0) return true;
  let held: ReadonlySet<LogEntry>;
  try {
    held = (await deps.reconciler?.holdsAnyway(behind, deps.cancelled)) ?? new Set<LogEntry>();
  } catch (err) {
    if (deps.cancelled.aborted) return false;
    throw err;
  }
  const lost = held.size === 0 ? behind : behind.filter((e) => !held.has(e));
  if (lost.length === 0) return true;
  countDropped(deps.metrics.dropped, lost, TOO_FAR_BEHIND);
  refused.push({
    entries: lost,
    reason: TOO_FAR_BEHIND,
    detail:
      "entry too far behind: Loki holds newer entries of its stream than max_chunk_age/2 ahead of it, " +
      "and a lookup did not find it stored",
  });
  return true;
}

/** One line per reason for this batch (rate-limited across batches by the lane's RefusalLog). */
function tellRefused(refused: readonly DroppedEntries[], deps: PushDeps): void {
  const byReason = new Map<string, { entries: number; example: string | undefined }>();
  for (const group of refused) {
    const seen = byReason.get(group.reason);
    if (seen) seen.entries += group.entries.length;
    else byReason.set(group.reason, { entries: group.entries.length, example: group.detail });
  }
  for (const [reason, { entries, example }] of byReason)
    deps.refusals.refused(reason, entries, example, deps.deadLetters !== undefined);
}

/** What a retry sends: the batch less what landed or was refused for good in earlier attempts. */
function stillOpen(
  batch: PendingBatch,
  landed: ReadonlySet<LogEntry>,
  refused: ReadonlySet<LogEntry>,
): LogEntry[] {
  return batch.pushView.filter((e) => !landed.has(e) && !refused.has(e));
}

/** Hands every refused group to the dead-letter sink; false when the run was torn down meanwhile. */
async function keepRefused(refused: readonly DroppedEntries[], deps: PushDeps): Promise<boolean> {
  if (!deps.deadLetters) return true;
  for (const group of refused) {
    await deps.deadLetters.keep(
      { entries: group.entries, reason: group.reason, detail: group.detail ?? `refused (${group.reason})` },
      deps.cancelled,
    );
  }
  return !deps.cancelled.aborted;
}

/** What to check for a push that keeps failing: a 429 is a Loki limit to raise, not an outage. */
function retryHint(err: unknown): string {
  return err instanceof Error && /HTTP 429/.test(err.message)
    ? "Loki is limiting this tenant or stream (HTTP 429); raise the limit its answer names " +
        "(per_stream_rate_limit, ingestion_rate_mb) or lower sink.loki.egress.max_bytes_per_second"
    : "check that Loki is reachable and accepts the credentials";
}

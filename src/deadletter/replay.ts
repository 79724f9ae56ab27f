// Sending dead letters to Loki again, through the sink the wiring builds (egress governor included).
// Batch by batch: what Loki accepted is removed from the store right after that batch, what it refused
// again stays with Loki's new words, so a replay cut short (Ctrl-C, a crash) re-sends at most one
// batch, and that batch is first looked up in Loki (its query API, the sink's tenant): what Loki already
// holds is removed, not sent twice (#27). A Loki that keeps failing ends the replay with nothing of the
// failing batch removed.
import { LogEntry } from "../model.ts";
import {
  PermanentSinkError,
  RetryableSinkError,
  StoredLookupError,
  type Sink,
  type StoredLookup,
} from "../sinks/sink.ts";
import type { Clock } from "../util/clock.ts";
import { describeError } from "../errors.ts";
import { retry, type RetryPolicy } from "../util/retry.ts";
import { DeadLetterStoreError } from "./errors.ts";
import type { DeadLetterRecord, DeadLetterStore } from "./types.ts";

export const REPLAY_BATCH = 500;
/** A few retries of a batch Loki could not take right now (429, 5xx, unreachable), then stop. */
const REPLAY_RETRY: RetryPolicy = {
  maxAttempts: 5,
  backoffMs: (attempt) => Math.min(30_000, 1000 * 2 ** (attempt - 1)),
};

export interface ReplayRun {
  store: DeadLetterStore;
  sink: Sink;
  records: readonly DeadLetterRecord[];
  clock: Clock;
  signal: AbortSignal;
  /** What Loki already holds (`sink.loki.reconcile`); absent: every letter is pushed. */
  lookup?: StoredLookup;
  /** Told once when a lookup fails: the replay then pushes unchecked (at-least-once). */
  onLookupFailed?: (err: unknown) => void;
  /** Called after every batch (the CLI prints progress on long replays). */
  onBatch?: (progress: ReplayProgress) => void;
  batchSize?: number;
}

export interface ReplayProgress {
  total: number;
  sent: number;
  delivered: number;
  refused: number;
  /** Not sent by the egress budget (`budget_action: drop`): kept as they were. */
  held: number;
  /** Found in Loki already (an earlier replay delivered them and was cut short): removed, not re-sent. */
  alreadyStored: number;
}

/** Loki kept failing (not refusing) a batch: the replay stops; what was delivered before is removed. */
export class DeadLetterReplayError extends DeadLetterStoreError {}

/** The entry a record stands for; its checkpoint token is never committed (replay commits nothing). */
export function toEntry(r: DeadLetterRecord): LogEntry {
  return new LogEntry({
    timestampNs: BigInt(r.timestamp_ns),
    labels: { ...r.labels },
    line: r.line,
    structuredMetadata: { ...r.structured_metadata },
    checkpoint: { key: r.checkpoint_key, value: "" },
  });
}

export async function replay(run: ReplayRun): Promise<ReplayProgress> {
  const size = run.batchSize ?? REPLAY_BATCH;
  const progress: ReplayProgress = {
    total: run.records.length,
    sent: 0,
    delivered: 0,
    refused: 0,
    held: 0,
    alreadyStored: 0,
  };
  let lookup = run.lookup;
  for (let start = 0; start < run.records.length; start += size) {
    run.signal.throwIfAborted();
    const chunk = run.records.slice(start, start + size);
    const entries = chunk.map(toEntry);
    const alreadyBefore = progress.alreadyStored;
    let stored: ReadonlySet<LogEntry> = new Set();
    if (lookup) {
      try {
        stored = (await lookup.stored(entries, run.signal)).stored;
      } catch (err) {
        if (!(err instanceof StoredLookupError)) throw err;
        run.onLookupFailed?.(err);
        lookup = undefined; // one notice, then at-least-once for the rest of the replay
      }
    }
    const toSend = stored.size === 0 ? entries : entries.filter((e) => !stored.has(e));
    const verdict =
      toSend.length === 0
        ? new Map<LogEntry, { reason: string; detail: string }>()
        : await pushOnce(run, toSend, progress);
    const remove = new Set<string>();
    const update = new Map<string, DeadLetterRecord>();
    for (const [i, r] of chunk.entries()) {
      const entry = entries[i]!;
      if (stored.has(entry)) {
        remove.add(r.id);
        progress.alreadyStored++;
        continue;
      }
      const outcome = verdict.get(entry);
      if (outcome === undefined) remove.add(r.id);
      else if (outcome.reason === "budget") progress.held++;
      else update.set(r.id, { ...r, reason: outcome.reason, detail: outcome.detail });
    }
    await run.store.rewrite(remove, update, run.signal);
    progress.sent += chunk.length;
    progress.delivered += remove.size - (progress.alreadyStored - alreadyBefore);
    progress.refused += update.size;
    run.onBatch?.({ ...progress });
  }
  return progress;
}

/** The entries Loki did not take, each with the reason and words; absent from the map: delivered. */
async function pushOnce(
  run: ReplayRun,
  entries: LogEntry[],
  progress: ReplayProgress,
): Promise<Map<LogEntry, { reason: string; detail: string }>> {
  const refused = new Map<LogEntry, { reason: string; detail: string }>();
  try {
    const result = await retry(() => run.sink.push(entries, run.signal), {
      policy: REPLAY_RETRY,
      clock: run.clock,
      signal: run.signal,
      isTransient: (err) => err instanceof RetryableSinkError,
      retryAfterMs: (err) => (err instanceof RetryableSinkError ? err.retryAfterMs : undefined),
    });
    const sent = new Set(entries);
    const byContent = new Map(entries.map((e) => [contentKey(e), e]));
    for (const group of result.dropped) {
      const why = { reason: group.reason, detail: group.detail ?? `refused again (${group.reason})` };
      for (const e of group.entries) {
        // The sink reports the entries it was given; should it ever report copies, match by content,
        // and if even that fails keep the whole batch rather than remove a letter Loki never took.
        const ours = sent.has(e) ? e : byContent.get(contentKey(e));
        if (!ours) {
          for (const all of entries) refused.set(all, refused.get(all) ?? why);
          continue;
        }
        refused.set(ours, why);
      }
    }
  } catch (err) {
    if (err instanceof PermanentSinkError) {
      for (const e of entries) refused.set(e, { reason: err.reason, detail: err.message });
      return refused;
    }
    if (err instanceof RetryableSinkError) {
      throw new DeadLetterReplayError(
        `Loki did not take a replayed batch after ${REPLAY_RETRY.maxAttempts} attempts ` +
          `(${describeError(err)}); ${progress.delivered} delivered so far were removed from the store, ` +
          "the rest are kept: check that Loki is reachable, then run the replay again",
        { cause: err },
      );
    }
    throw err;
  }
  return refused;
}

function contentKey(e: LogEntry): string {
  return `${e.timestampNs}\u0000${e.line}\u0000${JSON.stringify(e.labels)}`;
}

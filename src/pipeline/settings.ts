// The pipeline's knobs: `sink.loki.batch.*` from the YAML config (durations already converted to ms)
// plus the drain backstop. Validated here too, so a hand-built settings object cannot wedge a lane.
import { ConfigError } from "../errors.ts";

export interface BatchSettings {
  /** Flush when a batch holds this many entries (checkpoint-only ones count). */
  max_entries: number;
  /** Flush when Σ(lineBytes + 64) over the batch's real entries reaches this. */
  max_bytes: number;
  /** Flush this long after the first entry of a batch arrived. */
  flush_interval_ms: number;
  /** Per-line cap, applied by the sink; carried here only because it lives in the same YAML block. */
  max_line_bytes: number;
  /** Per-lane count bound (entries, checkpoint-only tokens and end-of-stream markers). */
  queue_maxsize: number;
  /** Per-lane byte budget (§2.5 entry cost); 0 disables byte accounting. */
  queue_max_bytes: number;
  /** Pushes per lane Loki has not answered yet; 1 reproduces one-push-at-a-time. */
  max_in_flight: number;
  /**
   * Batches per lane pushed and not yet committed (in flight, or delivered and waiting for their
   * checkpoint write): what a crash can re-deliver. At least max_in_flight.
   */
  max_uncommitted: number;
  /**
   * Loki's out-of-order window (its ingester's max_chunk_age / 2): no batch of a stream is pushed
   * further than this ahead of an earlier one still unanswered. 0 turns it off.
   */
  out_of_order_window_ms: number;
}

export const DEFAULT_BATCH_SETTINGS: Readonly<BatchSettings> = {
  max_entries: 1000,
  max_bytes: 1_048_576,
  flush_interval_ms: 1000,
  max_line_bytes: 262_144,
  queue_maxsize: 10_000,
  queue_max_bytes: 268_435_456,
  max_in_flight: 4,
  max_uncommitted: 16,
  out_of_order_window_ms: 3_600_000,
};

/** `service.shutdown_grace`: how long a stopped run may drain before it is force-cancelled. */
export const DEFAULT_SHUTDOWN_GRACE_MS = 25_000;

/**
 * What is wrong with max_uncommitted against max_in_flight, or undefined: the rule the config schema
 * (worded after its field path) and validateBatchSettings both apply.
 */
export function uncommittedProblem(
  s: Pick<BatchSettings, "max_in_flight" | "max_uncommitted">,
): string | undefined {
  if (s.max_uncommitted >= s.max_in_flight) return undefined;
  return (
    `is ${s.max_uncommitted}, below max_in_flight (${s.max_in_flight}): every push in flight is ` +
    `uncommitted; raise it to at least ${s.max_in_flight}`
  );
}

export function validateBatchSettings(s: BatchSettings): BatchSettings {
  const positiveInts = [
    "max_entries",
    "max_bytes",
    "queue_maxsize",
    "max_in_flight",
    "max_uncommitted",
  ] as const;
  for (const key of positiveInts) {
    if (!Number.isInteger(s[key]) || s[key] < 1) {
      throw new ConfigError(`sink.loki.batch.${key} is ${s[key]}; set it to a whole number of at least 1.`);
    }
  }
  const nonNegative = [
    "flush_interval_ms",
    "max_line_bytes",
    "queue_max_bytes",
    "out_of_order_window_ms",
  ] as const;
  for (const key of nonNegative) {
    if (!Number.isFinite(s[key]) || s[key] < 0) {
      throw new ConfigError(`sink.loki.batch.${key} is ${s[key]}; set it to 0 or more.`);
    }
  }
  const problem = uncommittedProblem(s);
  if (problem !== undefined) throw new ConfigError(`sink.loki.batch.max_uncommitted ${problem}.`);
  return s;
}

/** The pipeline's slice of a `sink.loki` config block (durations already in ms). */
export interface LokiBatchConfig {
  batch: Omit<BatchSettings, "flush_interval_ms" | "out_of_order_window_ms"> & { flush_interval: number };
  limits: { max_chunk_age: number };
}

/** BatchSettings from `sink.loki`: Loki's out-of-order window is half its max_chunk_age. */
export function batchSettingsOf(loki: LokiBatchConfig): BatchSettings {
  const { flush_interval, ...batch } = loki.batch;
  return {
    ...batch,
    flush_interval_ms: flush_interval,
    out_of_order_window_ms: loki.limits.max_chunk_age / 2,
  };
}

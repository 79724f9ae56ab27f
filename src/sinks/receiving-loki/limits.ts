// The local check: entries that Loki's distributor would refuse under the operator's
// `limits_config` are not sent at all; they come back as drops at once, each with the limit it
// breaks. Same names, defaults and order of checks as Loki (pkg/distributor/validator.go), so a
// matched config makes Loki's 400s rare and the push carries only what Loki will store.
import type { LogEntry, Labels } from "../../model.ts";
import type { RefusalReason } from "./refusals.ts";

/** `sink.loki.limits`, snake_case as in Loki's `limits_config`; sizes in bytes, durations in ms. */
export interface LokiLimits {
  /** Off: no check runs at all (Loki's 400s are still read per entry). */
  enabled: boolean;
  reject_old_samples: boolean;
  reject_old_samples_max_age: number;
  creation_grace_period: number;
  /** 0 disables. */
  max_line_size: number;
  /** Loki truncates long lines instead of refusing them: then nothing is refused for length. */
  max_line_size_truncate: boolean;
  /** 0 disables. */
  max_structured_metadata_size: number;
  /** 0 disables. */
  max_structured_metadata_entries_count: number;
  max_label_names_per_series: number;
  max_label_name_length: number;
  max_label_value_length: number;
  /**
   * The ingester's max_chunk_age in ms (0: none): a stream refuses an entry more than half of it
   * behind its newest one. Not a distributor check; the pipeline orders its pushes by it (#27).
   */
  max_chunk_age: number;
  /**
   * The ingester's per-stream bucket in bytes (0: every stream goes alone). Not a distributor check:
   * it decides which streams may share a request (wire/accepted-streams.ts, #37).
   */
  per_stream_rate_limit: number;
  per_stream_rate_limit_burst: number;
}

export const LOKI_DEFAULT_LIMITS: Readonly<LokiLimits> = {
  enabled: true,
  reject_old_samples: true,
  reject_old_samples_max_age: 168 * 3_600_000,
  creation_grace_period: 10 * 60_000,
  max_line_size: 262_144,
  max_line_size_truncate: false,
  max_structured_metadata_size: 65_536,
  max_structured_metadata_entries_count: 128,
  max_label_names_per_series: 15,
  max_label_name_length: 1024,
  max_label_value_length: 2048,
  max_chunk_age: 2 * 3_600_000,
  per_stream_rate_limit: 3 << 20,
  per_stream_rate_limit_burst: 15 << 20,
};

/**
 * Our clock and Loki's differ. The time checks refuse locally only what Loki refuses even with this
 * much skew either way; an entry closer to the edge is sent, and Loki's own 400 names it if it falls.
 */
export const CLOCK_SKEW_MARGIN_MS = 60_000;

export interface LocalRefusal {
  readonly entry: LogEntry;
  readonly reason: RefusalReason;
  /** The limit, its value, and the entry's: one line an operator can act on. */
  readonly detail: string;
}

export interface LocalCheck {
  /** `entries` itself when nothing is refused (the common case: no copy per batch). */
  readonly send: readonly LogEntry[];
  readonly refused: LocalRefusal[];
}

const utf8 = (s: string): number => Buffer.byteLength(s, "utf8");

function iso(ms: number): string {
  return new Date(ms).toISOString().replace(".000Z", "Z");
}

function formatAge(ms: number): string {
  return ms % 3_600_000 === 0
    ? `${ms / 3_600_000}h`
    : ms % 60_000 === 0
      ? `${ms / 60_000}m`
      : `${ms / 1000}s`;
}

/** What is wrong with a stream's labels under the limits, or undefined. */
function labelProblem(labels: Labels, limits: LokiLimits): string | undefined {
  const names = Object.keys(labels);
  // Loki does not count service_name: its own discovery may have added it.
  const counted = names.length - (names.includes("service_name") ? 1 : 0);
  if (counted > limits.max_label_names_per_series) {
    return `max_label_names_per_series ${limits.max_label_names_per_series}: the stream has ${counted} label names`;
  }
  for (const name of names) {
    if (utf8(name) > limits.max_label_name_length) {
      return `max_label_name_length ${limits.max_label_name_length}: label name ${name.slice(0, 64)}… is ${utf8(name)} bytes`;
    }
    const value = labels[name]!;
    if (utf8(value) > limits.max_label_value_length) {
      return `max_label_value_length ${limits.max_label_value_length}: label ${name} has a value of ${utf8(value)} bytes`;
    }
  }
  return undefined;
}

/** Splits `entries` into what to send and what Loki would refuse, checked against `nowMs`. */
export function checkLimits(entries: readonly LogEntry[], limits: LokiLimits, nowMs: number): LocalCheck {
  if (!limits.enabled) return { send: entries, refused: [] };
  // Filled only from the first refusal on: until then `send` is a prefix of `entries`.
  let send: LogEntry[] | undefined;
  const refused: LocalRefusal[] = [];
  const oldestMs = nowMs - limits.reject_old_samples_max_age - CLOCK_SKEW_MARGIN_MS;
  const oldestNs = BigInt(Math.floor(oldestMs)) * 1_000_000n;
  const newestMs = nowMs + limits.creation_grace_period + CLOCK_SKEW_MARGIN_MS;
  const newestNs = BigInt(Math.floor(newestMs)) * 1_000_000n;
  // Worded on the first refusal of each kind: most batches have none.
  const tooOld = (): string =>
    `reject_old_samples_max_age ${formatAge(limits.reject_old_samples_max_age)}: older than ` +
    `${iso(oldestMs)} (now ${iso(nowMs)}, less ${CLOCK_SKEW_MARGIN_MS / 1000}s for clock skew)`;
  const tooNew = (): string =>
    `creation_grace_period ${formatAge(limits.creation_grace_period)}: newer than ${iso(newestMs)} ` +
    `(now ${iso(nowMs)}, plus ${CLOCK_SKEW_MARGIN_MS / 1000}s for clock skew)`;
  let tooOldDetail: string | undefined;
  let tooNewDetail: string | undefined;
  const labelVerdicts = new Map<Labels, string | undefined>();
  // Entries of a run share one label object (the producer merges equal sets): one lookup per run.
  let lastLabels: Labels | undefined;
  let lastVerdict: string | undefined;
  let i = -1;
  const refuse = (entry: LogEntry, reason: RefusalReason, detail: string): void => {
    send ??= entries.slice(0, i);
    refused.push({ entry, reason, detail });
  };
  for (const entry of entries) {
    i++;
    if (entry.labels !== lastLabels) {
      lastLabels = entry.labels;
      if (labelVerdicts.has(lastLabels)) lastVerdict = labelVerdicts.get(lastLabels);
      else {
        lastVerdict = labelProblem(lastLabels, limits);
        labelVerdicts.set(lastLabels, lastVerdict);
      }
    }
    const labelVerdict = lastVerdict;
    if (labelVerdict !== undefined) {
      refuse(entry, "label_limits", labelVerdict);
      continue;
    }
    if (limits.reject_old_samples && entry.timestampNs < oldestNs) {
      refuse(entry, "too_old", (tooOldDetail ??= tooOld()));
      continue;
    }
    if (entry.timestampNs > newestNs) {
      refuse(entry, "too_far_in_future", (tooNewDetail ??= tooNew()));
      continue;
    }
    if (
      !limits.max_line_size_truncate &&
      limits.max_line_size > 0 &&
      entry.lineBytes > limits.max_line_size
    ) {
      refuse(
        entry,
        "line_too_long",
        `max_line_size ${limits.max_line_size}: the line has ${entry.lineBytes} bytes`,
      );
      continue;
    }
    // Counted at admission (the queue cost): the map itself is walked only when it could be too big.
    const fields = entry.metadataFields;
    if (fields > 0) {
      const chars = entry.metadataChars;
      const meta = entry.structuredMetadata;
      // A UTF-16 unit is at most 3 UTF-8 bytes: only metadata that could break the limit is measured.
      const metaBytes =
        limits.max_structured_metadata_size > 0 && chars * 3 > limits.max_structured_metadata_size
          ? Object.keys(meta).reduce((n, k) => n + utf8(k) + utf8(meta[k]!), 0)
          : chars;
      if (limits.max_structured_metadata_size > 0 && metaBytes > limits.max_structured_metadata_size) {
        refuse(
          entry,
          "metadata_too_large",
          `max_structured_metadata_size ${limits.max_structured_metadata_size}: the entry carries ${metaBytes} bytes`,
        );
        continue;
      }
      const maxCount = limits.max_structured_metadata_entries_count;
      if (maxCount > 0 && fields > maxCount) {
        refuse(
          entry,
          "metadata_too_large",
          `max_structured_metadata_entries_count ${maxCount}: the entry carries ${fields} fields`,
        );
        continue;
      }
    }
    send?.push(entry);
  }
  return { send: send ?? entries, refused };
}

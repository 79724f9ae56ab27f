// Loki's refusal messages, character for character (pkg/validation/validate.go, the distributor's
// validator, util.GroupedErrors, the ingester's out-of-order report), so the sink's parser is
// tested against the words a real Loki sends.

/** Prometheus `labels.Labels.String()`: `{a="b", c="d"}`, names sorted, values Go-quoted. */
export function promLabels(labels: Record<string, string>): string {
  const parts = Object.keys(labels)
    .sort()
    .map((k) => `${k}=${JSON.stringify(labels[k])}`);
  return `{${parts.join(", ")}}`;
}

/** Go `time.RFC3339` of an instant, in UTC: seconds, no fraction. */
export function rfc3339(ns: bigint): string {
  const ms = Number(ns / 1_000_000n) - (ns % 1_000_000n < 0n ? 1 : 0);
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/** Go `time.Time.String()` in UTC: `2026-01-01 00:00:00.000123 +0000 UTC` (fraction trimmed). */
export function goTimeString(ns: bigint): string {
  const sec = ns / 1_000_000_000n;
  const frac = (ns % 1_000_000_000n).toString().padStart(9, "0").replace(/0+$/, "");
  const base = new Date(Number(sec) * 1000).toISOString().slice(0, 19).replace("T", " ");
  return `${base}${frac === "" ? "" : `.${frac}`} +0000 UTC`;
}

export const tooOld = (stream: string, ts: bigint, oldest: bigint): string =>
  `entry for stream '${stream}' has timestamp too old: ${rfc3339(ts)}, oldest acceptable timestamp is: ${rfc3339(oldest)}`;

export const tooNew = (stream: string, ts: bigint): string =>
  `entry for stream '${stream}' has timestamp too new: ${rfc3339(ts)}`;

export const lineTooLong = (max: number, stream: string, bytes: number): string =>
  `Max entry size '${max}' bytes exceeded for stream '${stream}' while adding an entry with length '${bytes}' bytes`;

export const metadataTooLarge = (stream: string, bytes: number, max: number): string =>
  `stream '${stream}' has structured metadata too large: '${bytes}' bytes, limit: '${max}' bytes. ` +
  "Please see `limits_config.max_structured_metadata_size` or contact your Loki administrator to increase it.";

export const metadataTooMany = (stream: string, count: number, max: number): string =>
  `stream '${stream}' has too many structured metadata labels: '${count}', limit: '${max}'. ` +
  "Please see `limits_config.max_structured_metadata_entries_count` or contact your Loki administrator to increase it.";

export const tooManyLabelNames = (stream: string, n: number, max: number): string =>
  `entry for stream '${stream}' has ${n} label names; limit ${max}`;

export const labelNameTooLong = (stream: string, name: string): string =>
  `stream '${stream}' has label name too long: '${name}'`;

export const labelValueTooLong = (stream: string, value: string): string =>
  `stream '${stream}' has label value too long: '${value}'`;

/** util.GroupedErrors: identical texts grouped; a prefix when there are several groups or n > 1. */
export function groupedErrors(errors: readonly string[]): string {
  const counts = new Map<string, number>();
  for (const e of errors) counts.set(e, (counts.get(e) ?? 0) + 1);
  const parts: string[] = [];
  for (const [text, n] of counts) parts.push(counts.size > 1 || n > 1 ? `${n} errors like: ${text}` : text);
  return parts.join("; ");
}

/** Loki's `-ingester.max-ignored-stream-errors` default: the report lists at most this many entries. */
export const MAX_IGNORED_STREAM_ERRORS = 10;

/** The ingester's out-of-order report for one stream (stream.go), its list capped. */
export function outOfOrderReport(
  tenant: string,
  stream: string,
  ignored: readonly { ts: bigint; oldest: bigint }[],
  total: number,
  cap = MAX_IGNORED_STREAM_ERRORS,
): string {
  let out = "";
  for (const { ts, oldest } of cap > 0 ? ignored.slice(0, cap) : ignored) {
    out +=
      `entry with timestamp ${goTimeString(ts)} ignored, reason: 'entry too far behind, entry timestamp is: ` +
      `${rfc3339(ts)}, oldest acceptable timestamp is: ${rfc3339(oldest)}',\n`;
  }
  return `${out}user '${tenant}', total ignored: ${ignored.length} out of ${total} for stream: ${stream}`;
}

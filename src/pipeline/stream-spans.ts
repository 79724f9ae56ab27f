// Per stream, the oldest and newest timestamp one batch holds: what Loki's out-of-order window
// (stream-window.ts) compares between batches in flight. A batch carries its spans; the window reads
// them, so this sits below both.
import type { Labels, LogEntry } from "../model.ts";

export interface Span {
  min: bigint;
  max: bigint;
}

/** By stream (its exact label set): the oldest and newest timestamp a batch holds of it. */
export type StreamSpans = Map<string, Span>;

/** Order-independent and injective: sorted names, each name and value length-prefixed. */
function streamKey(labels: Labels): string {
  const names = Object.keys(labels).sort();
  let key = "";
  for (const k of names) {
    const v = labels[k]!;
    key += `${k.length}:${k}${v.length}:${v}`;
  }
  return key;
}

/**
 * The spans of a batch's real entries. Entries of a run share one labels object (the producer
 * merges static labels once per run), so a key is built once per distinct object, not per entry.
 */
export function streamSpans(entries: readonly LogEntry[]): StreamSpans {
  const spans: StreamSpans = new Map();
  const keys = new Map<Labels, Span>();
  let lastLabels: Labels | undefined;
  let span: Span | undefined;
  for (const e of entries) {
    if (e.labels !== lastLabels) {
      lastLabels = e.labels;
      span = keys.get(e.labels);
      if (!span) {
        const key = streamKey(e.labels);
        span = spans.get(key);
        if (!span) {
          span = { min: e.timestampNs, max: e.timestampNs };
          spans.set(key, span);
        }
        keys.set(e.labels, span);
      }
    }
    const ts = e.timestampNs;
    if (ts < span!.min) span!.min = ts;
    else if (ts > span!.max) span!.max = ts;
  }
  return spans;
}

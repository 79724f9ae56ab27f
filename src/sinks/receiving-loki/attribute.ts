// Maps Loki's refusals (refusals.ts) back onto the entries of the push that drew them. Loki stored
// every entry it did not name, so those are done; only what the body leaves open is pushed again:
// a message that names more entries than the batch can account for, an ingester list cut short,
// the streams an ingester report does not cover, or text nobody could parse.
import type { LogEntry, Labels } from "../../model.ts";
import { renderLabels } from "./labels.ts";
import type { LokiRefusal, ParsedRefusals, RefusalReason } from "./refusals.ts";

export interface Refused {
  readonly entry: LogEntry;
  readonly reason: RefusalReason;
  readonly detail: string;
}

export interface Attribution {
  /** Entries Loki named, each with its reason and Loki's words. */
  readonly refused: Refused[];
  /** Entries whose fate the body leaves open: stored or refused, nobody can tell. Push them again. */
  readonly unsettled: LogEntry[];
}

/** Order-independent key of a label map. */
function keyOf(labels: Labels): string {
  return JSON.stringify(
    Object.keys(labels)
      .sort()
      .map((k) => [k, labels[k]]),
  );
}

/** Labels Loki itself may add to a stream it names: stream sharding, service name discovery. */
const LOKI_ADDED = ["__stream_shard__", "service_name"] as const;

function structuredMetadataBytes(entry: LogEntry): number {
  let n = 0;
  for (const [k, v] of Object.entries(entry.structuredMetadata)) {
    n += Buffer.byteLength(k, "utf8") + Buffer.byteLength(v, "utf8");
  }
  return n;
}

/** The stream labels Loki sees for an entry: its own, or (OTLP) what Loki derives from the record. */
export type LokiLabelsOf = (entry: LogEntry) => Labels;

const ownLabels: LokiLabelsOf = (e) => e.labels;

class StreamIndex {
  readonly #byKey = new Map<string, LogEntry[]>();
  readonly #byRendered = new Map<string, LogEntry[]>();
  readonly #labelsOf: LokiLabelsOf;

  constructor(entries: readonly LogEntry[], labelsOf: LokiLabelsOf) {
    this.#labelsOf = labelsOf;
    const seen = new Map<Labels, LogEntry[]>();
    for (const e of entries) {
      const labels = labelsOf(e);
      let list = seen.get(labels);
      if (!list) {
        const key = keyOf(labels);
        list = this.#byKey.get(key);
        if (!list) {
          list = [];
          this.#byKey.set(key, list);
          this.#byRendered.set(renderLabels(labels), list);
        }
        seen.set(labels, list);
      }
      list.push(e);
    }
  }

  /** The batch's entries of the stream Loki named, tolerating labels Loki adds on its side. */
  find(refusal: Pick<LokiRefusal, "labels" | "rawLabels">): LogEntry[] | undefined {
    if (!refusal.labels) return this.#byRendered.get(refusal.rawLabels);
    const exact = this.#byKey.get(keyOf(refusal.labels));
    if (exact) return exact;
    let stripped = refusal.labels;
    for (const name of LOKI_ADDED) {
      if (!(name in stripped)) continue;
      stripped = Object.fromEntries(Object.entries(stripped).filter(([k]) => k !== name));
      const found = this.#byKey.get(keyOf(stripped));
      if (found && !found.some((e) => name in this.#labelsOf(e))) return found;
    }
    return undefined;
  }

  streams(): IterableIterator<LogEntry[]> {
    return this.#byKey.values();
  }
}

function candidates(stream: LogEntry[], refusal: LokiRefusal, taken: Set<LogEntry>): LogEntry[] {
  const open = stream.filter((e) => !taken.has(e));
  const m = refusal.match;
  switch (m.by) {
    case "stream":
      return open;
    case "second": {
      const inSecond = open.filter((e) => e.timestampNs / 1_000_000_000n === m.sec);
      // Loki's cut-off is monotone in time: within the second, the oldest (or newest) ones fell.
      inSecond.sort((a, b) => (a.timestampNs < b.timestampNs ? -1 : a.timestampNs > b.timestampNs ? 1 : 0));
      return m.pick === "oldest" ? inSecond : inSecond.reverse();
    }
    case "line_bytes":
      return open.filter((e) => e.lineBytes === m.bytes);
    case "metadata_bytes":
      return open.filter((e) => structuredMetadataBytes(e) === m.bytes);
    case "metadata_count":
      return open.filter((e) => Object.keys(e.structuredMetadata).length === m.count);
    case "has_metadata":
      return open.filter((e) => Object.keys(e.structuredMetadata).length > 0);
    case "timestamp":
      return open.filter((e) => e.timestampNs === m.ns);
  }
}

/** Which entries of `entries` the parsed 400 refused, and which it leaves open. */
export function attribute(
  entries: readonly LogEntry[],
  parsed: ParsedRefusals,
  labelsOf: LokiLabelsOf = ownLabels,
): Attribution {
  const index = new StreamIndex(entries, labelsOf);
  const taken = new Set<LogEntry>();
  const refused: Refused[] = [];
  const openStreams = new Set<LogEntry[]>();
  /** Entries of a stream from this instant on are settled even when the stream is open. */
  const openBefore = new Map<LogEntry[], bigint>();
  let allOpen = parsed.unparsed.length > 0 || (parsed.refusals.length === 0 && parsed.reports.length === 0);

  for (const refusal of parsed.refusals) {
    const stream = index.find(refusal);
    if (!stream) {
      allOpen = true; // a stream we did not send as such: nothing below can be trusted to be complete
      continue;
    }
    const found = candidates(stream, refusal, taken);
    const n = refusal.match.by === "stream" ? found.length : Math.min(refusal.count, found.length);
    if (refusal.match.by !== "stream" && found.length < refusal.count) openStreams.add(stream);
    for (const entry of found.slice(0, n)) {
      taken.add(entry);
      refused.push({ entry, reason: refusal.reason, detail: refusal.detail });
    }
  }

  if (parsed.reports.length > 0) {
    // An ingester's report covers its stream only (Loki returns one such error per push): every
    // other stream is open, and so is a reported stream whose list was cut short.
    const reported = new Set<LogEntry[]>();
    for (const report of parsed.reports) {
      const stream = index.find(report);
      if (!stream) {
        allOpen = true;
        continue;
      }
      reported.add(stream);
      if (report.total > report.listed && !openStreams.has(stream)) {
        openStreams.add(stream);
        if (report.oldestSec !== undefined) openBefore.set(stream, (report.oldestSec + 1n) * 1_000_000_000n);
      }
    }
    for (const stream of index.streams()) if (!reported.has(stream)) openStreams.add(stream);
  }

  const unsettled: LogEntry[] = [];
  for (const e of entries) {
    if (taken.has(e)) continue;
    if (allOpen) unsettled.push(e);
  }
  if (!allOpen) {
    for (const stream of openStreams) {
      const before = openBefore.get(stream);
      for (const e of stream) {
        if (!taken.has(e) && (before === undefined || e.timestampNs < before)) unsettled.push(e);
      }
    }
    // Keep batch order for the re-push.
    const order = new Map(entries.map((e, i) => [e, i]));
    unsettled.sort((a, b) => order.get(a)! - order.get(b)!);
  }
  return { refused, unsettled };
}

/** The entries of `part` an attribution says were stored: neither refused nor left open. */
export function storedOf(part: readonly LogEntry[], { refused, unsettled }: Attribution): LogEntry[] {
  const open = new Set<LogEntry>(unsettled);
  for (const r of refused) open.add(r.entry);
  return part.filter((e) => !open.has(e));
}

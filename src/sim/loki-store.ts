// What the simulated Loki accepted, queryable by label set, with Loki's dedup notion:
// an entry is a duplicate when stream + timestamp + line were already accepted.
import type { DecodedEntry } from "./loki-decoded.ts";
import { canonicalLabels } from "./loki-labels.ts";

export type LabelMap = Record<string, string>;

export interface AcceptedEntry {
  readonly labels: LabelMap;
  readonly timestampNs: bigint;
  readonly line: string;
  readonly metadata: Readonly<LabelMap>;
  /** The tenant it was pushed as (X-Scope-OrgID, or the basic-auth user); "fake" for none. */
  readonly tenant: string;
  /** True when Loki would have collapsed it into an earlier identical entry. */
  readonly duplicate: boolean;
  /** Arrival order: entries before the store's `flushedBefore` were flushed out of the ingester. */
  readonly seq: number;
}

export interface StreamSummary {
  readonly labels: LabelMap;
  readonly entries: number;
}

interface StoredStream {
  labels: LabelMap;
  entries: number;
  /** Undefined until an entry's timestamp is tracked (never, for a counts store without trackNewest). */
  maxTs: bigint | undefined;
}

function newest(stream: StoredStream, ts: bigint): void {
  if (stream.maxTs === undefined || ts > stream.maxTs) stream.maxTs = ts;
}

function matches(labels: LabelMap, matcher: LabelMap | undefined): boolean {
  if (!matcher) return true;
  for (const k of Object.keys(matcher)) if (labels[k] !== matcher[k]) return false;
  return true;
}

/**
 * `all` keeps every entry and Loki's dedup index (tests, the demo). `counts` decodes and validates
 * the same but keeps only per-stream counts, so a benchmark measures the sender, not this store.
 */
export type RetainMode = "all" | "counts";

export class AcceptedStore {
  readonly #retain: RetainMode;
  readonly #trackNewest: boolean;
  readonly #streams = new Map<string, StoredStream>();
  readonly #seen = new Set<string>();
  readonly #all: AcceptedEntry[] = [];
  unique = 0;
  duplicates = 0;
  #accepted = 0;
  /** Entries that arrived before this were flushed to the store by Loki's /flush (#35). */
  flushedBefore = 0;

  /**
   * `trackNewest: false` lets a `counts` store skip each entry's timestamp (the out-of-order window is
   * the only reader of the newest one); an `all` store keeps every timestamp anyway.
   */
  constructor(retain: RetainMode = "all", { trackNewest = true }: { trackNewest?: boolean } = {}) {
    this.#retain = retain;
    this.#trackNewest = trackNewest || retain === "all";
  }

  get accepted(): number {
    return this.#accepted;
  }

  /** Newest timestamp accepted so far on the stream (for the out-of-order window). */
  maxTimestamp(labels: LabelMap): bigint | undefined {
    if (!this.#trackNewest) throw new Error("this AcceptedStore was built with trackNewest: false");
    return this.#streams.get(canonicalLabels(labels))?.maxTs;
  }

  /** `key` is the stream's canonical label string when the caller already has it (once per stream). */
  add(labels: LabelMap, entry: DecodedEntry, key = canonicalLabels(labels), tenant = "fake"): void {
    this.#accepted++;
    let stream = this.#streams.get(key);
    if (!stream) {
      stream = { labels, entries: 0, maxTs: undefined };
      this.#streams.set(key, stream);
    }
    stream.entries++;
    if (this.#retain === "counts") {
      if (this.#trackNewest) newest(stream, entry.timestampNs);
      this.unique++;
      return;
    }
    const { timestampNs, line, metadata } = entry;
    newest(stream, timestampNs);
    // Loki keeps each tenant's data apart: the same entry under two tenants is two entries.
    const identity = `${tenant}\u0000${key}\u0000${timestampNs}\u0000${line}`;
    const duplicate = this.#seen.has(identity);
    if (duplicate) this.duplicates++;
    else {
      this.#seen.add(identity);
      this.unique++;
    }
    this.#all.push({ labels, timestampNs, line, metadata, tenant, duplicate, seq: this.#all.length });
  }

  /** Loki's /flush: everything accepted so far is in the store, readable over any range. */
  flush(): void {
    this.flushedBefore = this.#all.length;
  }

  /** Every accepted entry in arrival order (duplicates included, flagged) whose labels include `matcher`. */
  entries(matcher?: LabelMap): AcceptedEntry[] {
    return this.#all.filter((e) => matches(e.labels, matcher));
  }

  /** Lines Loki would return for the matcher: unique entries only, arrival order. */
  lines(matcher?: LabelMap): string[] {
    return this.#all.filter((e) => !e.duplicate && matches(e.labels, matcher)).map((e) => e.line);
  }

  /**
   * How many times each key (say an event id parsed from the line) arrived, duplicates included:
   * 1 everywhere means exactly-once, >1 shows redelivery, a missing key shows loss.
   */
  countBy(key: (line: string, entry: AcceptedEntry) => string, matcher?: LabelMap): Map<string, number> {
    const counts = new Map<string, number>();
    for (const e of this.#all) {
      if (!matches(e.labels, matcher)) continue;
      const k = key(e.line, e);
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    return counts;
  }

  streams(): StreamSummary[] {
    return [...this.#streams.values()].map((s) => ({ labels: s.labels, entries: s.entries }));
  }

  clear(): void {
    this.#streams.clear();
    this.#seen.clear();
    this.#all.length = 0;
    this.#accepted = 0;
    this.unique = 0;
    this.duplicates = 0;
    this.flushedBefore = 0;
  }
}

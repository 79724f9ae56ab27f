// How a backfilled entry differs from the daemon's: label mode adds `backfill="true"` and keeps the
// event time; --ingest-timestamps keeps the labels, moves the event time to structured metadata
// `event_time` and stamps a monotonic ingest clock (+1 µs per row, in push order). Under multi-org
// the org's labels are added as the daemon's OrgSource adds them.
import type { Labels, LogEntry } from "../model.ts";
import { formatIsoMs } from "../salesforce/soql-datetime.ts";

export class EntryDecorator {
  readonly #extra: Labels;
  readonly #ingest: boolean;
  /** One decorated label object per shaped one: the shapers share theirs across a file's rows. */
  readonly #cache = new WeakMap<Labels, Labels>();
  #ingestNs: bigint;

  constructor(opts: { entryLabels: Labels; ingestTimestamps: boolean; nowMs: number }) {
    this.#ingest = opts.ingestTimestamps;
    this.#extra = opts.ingestTimestamps ? opts.entryLabels : { ...opts.entryLabels, backfill: "true" };
    this.#ingestNs = BigInt(opts.nowMs) * 1_000_000n;
  }

  get ingestTimestamps(): boolean {
    return this.#ingest;
  }

  labels(entry: LogEntry): void {
    let labels = this.#cache.get(entry.labels);
    if (!labels) {
      labels = { ...entry.labels, ...this.#extra };
      this.#cache.set(entry.labels, labels);
    }
    entry.labels = labels;
  }

  /** Call in push order only: the ingest clock must be monotonic per stream. */
  stampIngest(entry: LogEntry): void {
    entry.structuredMetadata = { ...entry.structuredMetadata, event_time: formatIsoMs(entry.timestampNs) };
    entry.timestampNs = this.#ingestNs;
    this.#ingestNs += 1_000n;
  }
}

// Ingest metrics for one producer (spec B §2.4). The counter is tallied locally and added to the
// instrument when the lane flushes a batch: an OTel add() per entry hashes its attributes, which
// costs more than the rest of the hot path. The lag histogram has no batched form, so it records
// per entry with a cached attribute object. Under multi-org both carry the entry's `org`.
import type { Counter, Histogram } from "@opentelemetry/api";
import { nsToNumber, type LogEntry } from "../model.ts";

interface Slot {
  readonly attrs: { source: string; event_type: string; org?: string };
  n: number;
}

export class IngestTally {
  readonly #source: string;
  readonly #counter: Counter;
  readonly #lag: Histogram;
  readonly #byType = new Map<string, Slot>();
  #last: Slot | undefined;

  constructor(source: string, counter: Counter, lag: Histogram) {
    this.#source = source;
    this.#counter = counter;
    this.#lag = lag;
  }

  /** A real entry of `org` (multi-org; else undefined) entered the pipeline at wall-clock `nowMs`. */
  record(entry: LogEntry, nowMs: number, org?: string): void {
    const eventType = entry.labels.event_type ?? "unknown";
    let slot = this.#last;
    if (slot?.attrs.event_type !== eventType || slot.attrs.org !== org) {
      const key = org === undefined ? eventType : `${org}\n${eventType}`;
      slot = this.#byType.get(key);
      if (slot === undefined) {
        const attrs = { source: this.#source, event_type: eventType };
        slot = { attrs: org === undefined ? attrs : { ...attrs, org }, n: 0 };
        this.#byType.set(key, slot);
      }
      this.#last = slot;
    }
    slot.n++;
    // A double loses sub-µs precision at today's epoch; irrelevant for a lag in seconds.
    this.#lag.record((nowMs - nsToNumber(entry.timestampNs) / 1e6) / 1000, slot.attrs);
  }

  /** Adds what was tallied since the last flush to the counter. */
  flush(): void {
    for (const slot of this.#byType.values()) {
      if (slot.n === 0) continue;
      this.#counter.add(slot.n, slot.attrs);
      slot.n = 0;
    }
  }
}

// What every polling source does to turn one payload into a LogEntry, plus the shared counters
// (timestamp fallbacks, sampled-out rows) so the three sources cannot drift apart.
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import { LogEntry, msToNs, type CheckpointToken, type Labels } from "../../model.ts";
import type { Clock } from "../../util/clock.ts";
import type { SourceName } from "../source.ts";
import { canonicalJson } from "./json.ts";
import { routeFields } from "./metadata.ts";
import { shouldKeep } from "./sample.ts";
import { pickTimestamp } from "./timestamp.ts";

export interface ShapeRequest {
  payload: Record<string, unknown>;
  labels: Labels;
  metadataFields: readonly string[];
  timestampFields: readonly string[];
  /** The stable fallback instant (watermark, file CreatedDate); clamped when older than 1 h. */
  fallbackNs: bigint | undefined;
  checkpoint: CheckpointToken;
  /** Defaults to the canonical JSON of the payload. */
  line?: string;
  /** Merged after the routed fields (ApexLog's metadata). */
  extraMetadata?: Labels;
}

export class EntryShaper {
  readonly #source: SourceName;
  readonly #clock: Clock;
  readonly #fallbacks: Counter;
  readonly #sampledOut: Counter;

  constructor(source: SourceName, clock: Clock, meter: Meter = metrics.getMeter("sf2loki")) {
    this.#source = source;
    this.#clock = clock;
    this.#fallbacks = meter.createCounter("sf2loki_timestamp_fallbacks", {
      description: "Entries whose timestamp came from a fallback, not the payload",
    });
    this.#sampledOut = meter.createCounter("sf2loki_entries_sampled_out", {
      description: "Rows dropped by deterministic sampling",
    });
  }

  /** Applies the keep rate; a dropped row is counted under its event type. */
  keep(key: string, rate: number, eventType: string): boolean {
    if (shouldKeep(key, rate)) return true;
    this.#sampledOut.add(1, { source: this.#source, event_type: eventType });
    return false;
  }

  timestampNs(
    payload: Record<string, unknown>,
    fields: readonly string[],
    fallbackNs: bigint | undefined,
  ): bigint {
    const picked = pickTimestamp(payload, fields, fallbackNs, this.#clock.now());
    if (picked.fellBack) this.#fallbacks.add(1, { source: this.#source });
    return picked.ns;
  }

  /** No candidate parsed: the stable fallback (clamped) or now, counted. */
  fallbackNs(fallbackNs: bigint | undefined): bigint {
    this.#fallbacks.add(1, { source: this.#source });
    return pickTimestamp({}, [], fallbackNs, this.#clock.now()).ns;
  }

  entry(req: ShapeRequest): LogEntry {
    const structuredMetadata = routeFields(req.payload, req.metadataFields);
    if (req.extraMetadata) {
      for (const [k, v] of Object.entries(req.extraMetadata))
        if (!(k in structuredMetadata)) structuredMetadata[k] = v;
    }
    return new LogEntry({
      timestampNs: this.timestampNs(req.payload, req.timestampFields, req.fallbackNs),
      labels: req.labels,
      line: req.line ?? canonicalJson(req.payload),
      structuredMetadata,
      checkpoint: req.checkpoint,
    });
  }

  checkpointOnly(checkpoint: CheckpointToken): LogEntry {
    return LogEntry.checkpointOnly(checkpoint, msToNs(this.#clock.now()));
  }
}

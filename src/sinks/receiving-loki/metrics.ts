// The sink's own instruments (spec B §6.2). Drops are counted by the pipeline, not here.
import type { Counter, Meter } from "@opentelemetry/api";

export interface LokiSinkMetrics {
  /** Compressed request body bytes per 2xx. */
  readonly bytesPushed: Counter;
  /** Lines cut by the per-line cap, attribute `source`. */
  readonly linesTruncated: Counter;
}

/** The sources' `source` label values, known in advance: their series export at 0 from start-up. */
const SOURCES = ["pubsub", "eventlog_objects", "eventlogfile", "apexlog"];

export function createLokiSinkMetrics(meter: Meter): LokiSinkMetrics {
  const metrics = {
    bytesPushed: meter.createCounter("sf2loki_loki_bytes_pushed", {
      description: "Compressed Loki push request body bytes accepted with a 2xx",
    }),
    linesTruncated: meter.createCounter("sf2loki_lines_truncated", {
      description: "Log lines cut to sink.loki.batch.max_line_bytes before pushing",
    }),
  };
  for (const source of SOURCES) metrics.linesTruncated.add(0, { source });
  return metrics;
}

// Every instrument the pipeline writes, created once per Pipeline with the spec's names (B §6.2).
import type { Counter, Histogram, Meter } from "@opentelemetry/api";
import { hotPathHistogram } from "../obs/hot-path-histogram.ts";
import { StateGauge } from "../obs/metrics.ts";

const INGEST_LAG_BUCKETS = [1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400];
// Second-scale: the SDK default buckets are meant for milliseconds (spec B §6.2 QUIRK).
const PUSH_DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

export const PUSH_SUCCESS = { outcome: "success" } as const;
export const PUSH_RETRIED = { outcome: "retried" } as const;

export class PipelineMetrics {
  readonly ingested: Counter;
  readonly ingestLag: Histogram;
  readonly push: Counter;
  readonly pushDuration: Histogram;
  readonly dropped: Counter;
  readonly abandoned: Counter;
  readonly lastPushSuccess: StateGauge;
  readonly replayCommit: StateGauge;
  readonly watermark: StateGauge;

  /** Read at collection time: the sums over lanes of queued items and of their queued line bytes. */
  constructor(meter: Meter, queueDepth: () => number, queueBytes: () => number) {
    this.ingested = meter.createCounter("sf2loki_events_ingested", {
      description: "Real entries that entered the pipeline, by source and event type.",
    });
    // Recorded once per entry: aggregated locally when the daemon's registry allows it.
    this.ingestLag = hotPathHistogram(meter, "sf2loki_ingest_lag_seconds", {
      description: "Now minus the entry timestamp at ingest.",
      unit: "s",
      boundaries: INGEST_LAG_BUCKETS,
    });
    this.push = meter.createCounter("sf2loki_loki_push", {
      description: "Pipeline-level push outcomes (success, retried).",
    });
    this.pushDuration = meter.createHistogram("sf2loki_loki_push_duration_seconds", {
      description: "Duration of successful push calls.",
      unit: "s",
      advice: { explicitBucketBoundaries: PUSH_DURATION_BUCKETS },
    });
    this.dropped = meter.createCounter("sf2loki_loki_entries_dropped", {
      description: "Entries permanently not delivered, by reason, source, event type and org.",
    });
    this.abandoned = meter.createCounter("sf2loki_pipeline_entries_abandoned", {
      description: "Entries left uncommitted by a shutdown drain; they are re-read on the next run.",
    });
    // Exported at 0 from start-up, so an alert on drops has a series to evaluate on a healthy daemon
    // instead of going silent for lack of data.
    this.dropped.add(0);
    // State gauges export their last value continuously (OPEN #90).
    this.lastPushSuccess = new StateGauge(
      meter,
      "sf2loki_last_push_success_timestamp_seconds",
      "Wall-clock unix time of the last successful push.",
    );
    this.replayCommit = new StateGauge(
      meter,
      "sf2loki_last_replay_commit_timestamp_seconds",
      "Wall-clock unix time of the last commit of a Pub/Sub replay id, by topic.",
    );
    this.watermark = new StateGauge(
      meter,
      "sf2loki_watermark_timestamp_seconds",
      "Watermark of the last committed polling checkpoint, by source and object.",
    );
    meter
      .createObservableGauge("sf2loki_queue_depth", {
        description: "Items queued over all lanes (checkpoint tokens and end markers included).",
      })
      .addCallback((result) => {
        result.observe(queueDepth());
      });
    meter
      .createObservableGauge("sf2loki_queue_bytes", {
        description: "Line bytes queued over all lanes (what queue_max_bytes bounds).",
        unit: "By",
      })
      .addCallback((result) => {
        result.observe(queueBytes());
      });
  }
}

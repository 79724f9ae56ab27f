// Connector health (Prometheus): is data flowing in, getting to Loki, being checkpointed, and is
// exactly one replica leading. Every name here is checked against a live daemon's /metrics by
// test/deploy/metric-names.test.ts.
import { RowBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import type { DashboardBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import { JOB, sf2lokiDashboard, stat, table, timeseries } from "./panels.ts";

const RATE = "$__rate_interval";

export function connectorHealth(): DashboardBuilder {
  return sf2lokiDashboard(
    "sf2loki-connector-health",
    "sf2loki / Connector health",
    "Ingest, delivery to Loki, queue, checkpoints, leadership and Salesforce client health of sf2loki.",
    ["prometheus"],
  )
    .withRow(new RowBuilder("Overview"))
    .withPanel(
      stat(
        "prometheus",
        "Leaders",
        "sum(sf2loki_leader): 1 is healthy; 0 means nobody ships, 2 should never last.",
        "none",
        `sum(sf2loki_leader{${JOB}})`,
      ),
    )
    .withPanel(
      stat(
        "prometheus",
        "Since last successful push",
        "Seconds since Loki last accepted a push (max over replicas).",
        "s",
        `time() - max(sf2loki_last_push_success_timestamp_seconds{${JOB}})`,
      ),
    )
    .withPanel(
      stat(
        "prometheus",
        "Ingest rate",
        "Entries per second entering the pipeline.",
        "ops",
        `sum(rate(sf2loki_events_ingested_total{${JOB}}[${RATE}]))`,
      ),
    )
    .withPanel(
      stat(
        "prometheus",
        "Entries dropped (1h)",
        "Entries Loki permanently refused in the last hour; anything above 0 is data loss.",
        "none",
        `sum(increase(sf2loki_loki_entries_dropped_total{${JOB}}[1h]))`,
      ),
    )
    .withRow(new RowBuilder("Ingest"))
    .withPanel(
      timeseries(
        "prometheus",
        "Ingest rate by source and event type",
        "Real entries entering the pipeline per second.",
        "ops",
        [
          {
            expr: `sum by (source, event_type) (rate(sf2loki_events_ingested_total{${JOB}}[${RATE}]))`,
            legend: "{{source}} {{event_type}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Ingest lag p95 by source",
        "Now minus the event timestamp at ingest, 95th percentile. ELF is hourly or daily by design.",
        "s",
        [
          {
            expr: `histogram_quantile(0.95, sum by (le, source) (rate(sf2loki_ingest_lag_seconds_bucket{${JOB}}[${RATE}])))`,
            legend: "{{source}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Checkpoint age by topic and org (Pub/Sub)",
        "Seconds since the last committed replay id per topic.",
        "s",
        [
          {
            expr: `time() - max by (topic, org) (sf2loki_last_replay_commit_timestamp_seconds{${JOB}})`,
            legend: "{{topic}} {{org}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Watermark age by object and org (polling)",
        "Now minus the committed watermark of each polled object.",
        "s",
        [
          {
            expr: `time() - max by (source, object, org) (sf2loki_watermark_timestamp_seconds{${JOB}})`,
            legend: "{{source}} {{object}} {{org}}",
          },
        ],
      ),
    )
    .withRow(new RowBuilder("Delivery to Loki"))
    .withPanel(
      timeseries("prometheus", "Push outcomes", "Pipeline-level push outcomes per second.", "reqps", [
        {
          expr: `sum by (outcome) (rate(sf2loki_loki_push_total{${JOB}}[${RATE}]))`,
          legend: "{{outcome}}",
        },
      ]),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Push latency",
        "Duration of successful pushes, retries inside the call included.",
        "s",
        [
          {
            expr: `histogram_quantile(0.5, sum by (le) (rate(sf2loki_loki_push_duration_seconds_bucket{${JOB}}[${RATE}])))`,
            legend: "p50",
          },
          {
            expr: `histogram_quantile(0.95, sum by (le) (rate(sf2loki_loki_push_duration_seconds_bucket{${JOB}}[${RATE}])))`,
            legend: "p95",
          },
        ],
      ),
    )
    .withPanel(
      timeseries("prometheus", "Bytes pushed", "Compressed request bytes Loki accepted per second.", "Bps", [
        { expr: `sum(rate(sf2loki_loki_bytes_pushed_total{${JOB}}[${RATE}]))`, legend: "bytes" },
      ]),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Entries dropped and truncated",
        "Dropped: permanently refused by Loki, by reason. Truncated: lines cut to batch.max_line_bytes.",
        "ops",
        [
          {
            expr: `sum by (reason) (rate(sf2loki_loki_entries_dropped_total{${JOB}}[${RATE}]))`,
            legend: "dropped {{reason}}",
          },
          {
            expr: `sum by (source) (rate(sf2loki_lines_truncated_total{${JOB}}[${RATE}]))`,
            legend: "truncated {{source}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Dead letters",
        "Refused entries kept in the dead-letter store, by reason; evicted at its bound and failed writes are lost. sf2loki deadletter list shows them.",
        "ops",
        [
          {
            expr: `sum by (reason) (rate(sf2loki_deadletter_entries_total{${JOB}}[${RATE}]))`,
            legend: "kept {{reason}}",
          },
          { expr: `sum(rate(sf2loki_deadletter_evicted_total{${JOB}}[${RATE}]))`, legend: "evicted" },
          {
            expr: `sum(rate(sf2loki_deadletter_write_failures_total{${JOB}}[${RATE}]))`,
            legend: "write failures",
          },
        ],
      ),
    )
    .withRow(new RowBuilder("Queue and checkpoints"))
    .withPanel(
      timeseries(
        "prometheus",
        "Queue depth and bytes",
        "Entries and line bytes queued over all lanes; a full queue holds the sources back.",
        "short",
        [
          { expr: `sum(sf2loki_queue_depth{${JOB}})`, legend: "entries" },
          { expr: `sum(sf2loki_queue_bytes{${JOB}})`, legend: "bytes" },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Checkpoint store",
        "Store up (0 from its first failed call until the next success), failed calls by operation, and entries a shutdown left uncommitted (re-read next run).",
        "short",
        [
          { expr: `min by (instance) (sf2loki_checkpoint_store_up{${JOB}})`, legend: "up {{instance}}" },
          {
            expr: `sum by (op) (increase(sf2loki_checkpoint_store_errors_total{${JOB}}[${RATE}]))`,
            legend: "errors {{op}}",
          },
          {
            expr: `sum(increase(sf2loki_pipeline_entries_abandoned_total{${JOB}}[${RATE}]))`,
            legend: "abandoned",
          },
        ],
      ),
    )
    .withRow(new RowBuilder("Leadership"))
    .withPanel(
      timeseries("prometheus", "Leader by replica", "1 while a replica leads.", "none", [
        { expr: `max by (instance) (sf2loki_leader{${JOB}})`, legend: "{{instance}}" },
      ]),
    )
    .withPanel(
      table(
        "prometheus",
        "Versions",
        "sf2loki_build_info per replica.",
        `max by (instance, version) (sf2loki_build_info{${JOB}})`,
      ),
    )
    .withRow(new RowBuilder("Salesforce"))
    .withPanel(
      timeseries("prometheus", "Auth refreshes and errors", "Token mints and failed mints.", "short", [
        {
          expr: `sum(increase(sf2loki_auth_refreshes_total{${JOB}}[${RATE}]))`,
          legend: "refreshes",
        },
        { expr: `sum(increase(sf2loki_auth_errors_total{${JOB}}[${RATE}]))`, legend: "errors" },
      ]),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Pub/Sub credit and streams",
        "Flow-control credit outstanding per topic, and whether each stream is up.",
        "short",
        [
          {
            expr: `sum by (topic) (sf2loki_pubsub_pending_credits{${JOB}})`,
            legend: "credit {{topic}}",
          },
          { expr: `min by (topic) (sf2loki_pubsub_stream_up{${JOB}})`, legend: "up {{topic}}" },
          {
            expr: `sum by (topic) (increase(sf2loki_pubsub_reconnects_total{${JOB}}[${RATE}]))`,
            legend: "reconnects {{topic}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Org limits remaining",
        "Remaining share of each Salesforce org limit (salesforce.limits.enabled).",
        "percentunit",
        [
          {
            expr: `min by (org, limit_name) (sf2loki_salesforce_limit_remaining{${JOB}} / sf2loki_salesforce_limit_max{${JOB}})`,
            legend: "{{org}} {{limit_name}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Polling errors and throttling",
        "Failed SOQL poll cycles, EventLogFile download errors and REQUEST_LIMIT_EXCEEDED answers.",
        "short",
        [
          {
            expr: `sum by (source, object) (increase(sf2loki_soql_poll_errors_total{${JOB}}[${RATE}]))`,
            legend: "poll errors {{source}} {{object}}",
          },
          {
            expr: `sum by (reason) (increase(sf2loki_eventlogfile_download_errors_total{${JOB}}[${RATE}]))`,
            legend: "ELF download errors {{reason}}",
          },
          {
            expr: `sum by (api) (increase(sf2loki_salesforce_api_throttled_total{${JOB}}[${RATE}]))`,
            legend: "throttled {{api}}",
          },
        ],
      ),
    )
    .withRow(new RowBuilder("Egress budget"))
    .withPanel(
      timeseries(
        "prometheus",
        "Egress budget used",
        "Line bytes counted against sink.loki.egress.daily_byte_budget this UTC day (0 when no budget is set).",
        "bytes",
        [
          {
            // One series per Loki destination: an org's own one carries `destination` (#123).
            expr: `max by (job, destination) (sf2loki_egress_budget_used_bytes{${JOB}})`,
            legend: "used {{job}} {{destination}}",
          },
        ],
      ),
    )
    .withPanel(
      timeseries(
        "prometheus",
        "Egress paused and rate-limited",
        "1 while the daily budget holds pushes (budget_action: pause); p95 wait of a push for the rate caps.",
        "short",
        [
          {
            expr: `max by (job, destination) (sf2loki_egress_paused{${JOB}})`,
            legend: "paused {{job}} {{destination}}",
          },
          {
            expr: `histogram_quantile(0.95, sum by (le) (rate(sf2loki_egress_rate_limited_wait_seconds_bucket{${JOB}}[${RATE}])))`,
            legend: "p95 rate-limit wait (s)",
          },
        ],
      ),
    );
}

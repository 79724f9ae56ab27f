// Two orgs in one daemon, every source running in both, then /metrics scraped: every per-org series
// carries `org` (the Python version's Metrics.for_org), and because the two orgs are configured
// alike, each org's series has a twin for the other org: nothing merged, nothing collides.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { pollingSources, simSalesforceConfig } from "../../src/sim/demo-polling.ts";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import type { SimPollingData } from "../../src/sim/salesforce-rest/index.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import { startTwoOrgs } from "../support/two-orgs.ts";
import { tempDir } from "../support/tmp.ts";

/** Process-wide series: the pipeline, the sink, the store, the process. Everything else is per org. */
const PROCESS_WIDE = new Set([
  "target_info",
  "sf2loki_build_info",
  "sf2loki_leader",
  "sf2loki_queue_depth",
  "sf2loki_loki_push_total",
  "sf2loki_loki_push_duration_seconds",
  "sf2loki_loki_bytes_pushed_total",
  // One pipeline serves every org; a shutdown's abandonment is counted once (its log names the keys).
  "sf2loki_pipeline_entries_abandoned_total",
  // Per Loki destination, by its tenant: a destination may serve several orgs.
  "sf2loki_loki_rate_limited_responses_total",
  "sf2loki_loki_rate_limited_seconds_total",
  "sf2loki_loki_ingestion_limit_bytes_per_second",
  "sf2loki_last_push_success_timestamp_seconds",
  "sf2loki_lines_truncated_total",
  // The checkpoint store and the leadership watchdog serve every org at once.
  "sf2loki_checkpoint_store_errors_total",
  "sf2loki_checkpoint_store_up",
  "sf2loki_watchdog_stalled",
  "sf2loki_watchdog_wedged",
  "sf2loki_watchdog_resignations_total",
  // The top-level Loki destination's governor; an org's own destination adds `destination` (#123).
  "sf2loki_egress_budget_used_bytes",
  "sf2loki_egress_paused",
  "sf2loki_queue_bytes",
  // Its start-up zero series has no org; real drops carry the entries' org (test/pipeline/failures.test.ts).
  "sf2loki_loki_entries_dropped_total",
  // One dead-letter store serves every org (each record names its org; `deadletter list --org`).
  "sf2loki_deadletter_entries_total",
  "sf2loki_deadletter_evicted_total",
  "sf2loki_deadletter_write_failures_total",
  "sf2loki_deadletter_held_entries",
  "sf2loki_deadletter_held_bytes",
  // Reconcile on resume runs per Loki destination, which several orgs may share (#27).
  "sf2loki_reconcile_entries_skipped_total",
  "sf2loki_reconcile_queries_total",
  "sf2loki_reconcile_resumes_total",
  "sf2loki_reconcile_seconds_total",
  "sf2loki_reconcile_entries_unverified_total",
  "sf2loki_reconcile_unverified_age_seconds",
  "sf2loki_reconcile_flushes_total",
]);

interface Series {
  name: string;
  labels: Record<string, string>;
}

/** Prometheus text exposition to series; histogram parts fold into their family name. */
function parseExposition(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? \S+$/.exec(line);
    assert.ok(m, `exposition line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[k!] = v!;
    delete labels.le;
    out.push({ name: m[1]!.replace(/_(bucket|sum|count)$/, ""), labels });
  }
  return out;
}

test("two orgs: every per-org metric series carries org, and the orgs' series pair up", async (t) => {
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const polling: SimPollingData = {
    objects: { LoginEvent: { records: 30 } },
    eventLogFiles: { API: { rows: 50, files: 1 } },
    apexLogs: 10,
  };
  const topic = "/event/LoginEventStream";
  const orgs: Record<string, SimOrg> = await startTwoOrgs(t, {
    topics: [topic],
    eventsPerTopic: 20,
    polling,
  });
  const config = validateConfig({
    orgs: Object.entries(orgs).map(([name, org]) => ({
      name,
      salesforce: { ...simSalesforceConfig(org, DEMO_SECRET), limits: { enabled: true } },
      sources: {
        ...pollingSources(org.rest.data),
        allow_overlap: true,
        pubsub: { endpoint: org.pubsubEndpoint, insecure: true, topics: [topic], replay_preset: "EARLIEST" },
      },
    })),
    sink: { loki: { url: loki.pushUrl, batch: { flush_interval: "50ms" } } },
    state: { file: { path: join(tempDir(), "state.json") } },
  });
  const app = createApp(config, { pollOnce: true, healthAddr: "127.0.0.1:0" });
  const stop = new AbortController();
  const running = app.run(stop.signal);
  const expected = 2 * (20 + 30 + 50 + 10);
  let exposition: string;
  try {
    const deadline = Date.now() + 30_000;
    while (loki.entries().length < expected) {
      assert.ok(Date.now() < deadline, `delivered ${loki.entries().length} of ${expected}`);
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const res = await fetch(`${app.healthUrl()!}/metrics`);
    exposition = await res.text();
  } finally {
    stop.abort();
    await running;
  }

  const series = parseExposition(exposition);
  const perOrg = series.filter((s) => !PROCESS_WIDE.has(s.name));
  const missing = perOrg.filter((s) => s.labels.org === undefined).map((s) => s.name);
  assert.deepEqual([...new Set(missing)], [], "per-org series without an org label");

  // Alike orgs: each org's series, with org set aside, is exactly the other's.
  const keyOf = (s: Series): string =>
    `${s.name}${JSON.stringify(Object.entries(s.labels).filter(([k]) => k !== "org" && k !== "sf_org_id"))}`;
  const byOrg = (org: string): string[] =>
    [...new Set(perOrg.filter((s) => s.labels.org === org).map(keyOf))].sort();
  assert.deepEqual(byOrg("emea"), byOrg("prod"));
  const names = new Set(perOrg.map((s) => s.name));
  for (const name of [
    "sf2loki_events_ingested_total",
    "sf2loki_ingest_lag_seconds",
    "sf2loki_auth_refreshes_total",
    "sf2loki_pubsub_stream_up",
    "sf2loki_pubsub_pending_credits",
    "sf2loki_eventlogfile_rows_ingested_total",
    "sf2loki_apexlog_logs_ingested_total",
    "sf2loki_salesforce_limit_max",
  ]) {
    assert.ok(names.has(name), `${name} is exported per org`);
  }
});

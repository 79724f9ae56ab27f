// One source of truth for metric names: a daemon runs against the simulated org (Pub/Sub, polled
// objects, EventLogFiles, ApexLogs, org limits) until everything is delivered, its /metrics is
// scraped, and every dashboard panel and rule must name only metrics and labels that daemon exports
// (exported by this healthy daemon from start-up, so a rule cannot go silent and a panel never reads
// "No data" on a healthy daemon), and docs/metrics.md must match src/ and /metrics.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../../src/daemon/app.ts";
import { deepMerge } from "../../src/config/env.ts";
import { validateConfig } from "../../src/config/load.ts";
import { DEMO_TOPICS, startDemoWorld } from "../../src/sim/demo-world.ts";
import { runAppUntil } from "../support/run-app.ts";
import { tempDir } from "../support/tmp.ts";
import {
  buildCatalogue,
  checkQueries,
  docsDrift,
  seriesProblems,
  type Catalogue,
} from "./metric-catalogue.ts";
import { parseSeries, promtoolCases } from "./promtool-tests.ts";
import { allShippedQueries, dashboardQueries, PROM_RULE_FILES, ruleQueries, type Query } from "./queries.ts";

/** Runs the daemon until the world's data is all in Loki, and returns its /metrics text. */
async function scrapeHealthyDaemon(): Promise<string> {
  const world = await startDemoWorld({
    eventsPerTopic: 200,
    topics: DEMO_TOPICS,
    polling: {
      objects: { ApiAnomalyEventStore: { records: 50 } },
      eventLogFiles: { ApexCallout: { rows: 50 }, Report: { rows: 20 } },
      apexLogs: 5,
    },
  });
  try {
    const tree = deepMerge(world.config(join(tempDir(), "state.json")), {
      salesforce: { limits: { enabled: true } },
      // The egress panels read the wait of each push for the caps: exported where caps are set. A cap
      // far above this world's rate, so every push records its (zero) wait.
      sink: { loki: { egress: { max_bytes_per_second: 1_000_000_000 } } },
    });
    const app = createApp(validateConfig(tree));
    const delivered = (): boolean =>
      Object.values(world.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted) &&
      Object.values(world.pollingStats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted);
    let scraped: string | undefined;
    let failure: Error | undefined;
    let asked = false;
    // Once everything is delivered, one scrape; the app stops when it answered (or failed).
    await runAppUntil(app, () => {
      const url = app.healthUrl();
      if (!asked && url !== undefined && delivered()) {
        asked = true;
        fetch(`${url}/metrics`)
          .then((r) => r.text())
          .then(
            (text) => {
              scraped = text;
            },
            (err: unknown) => {
              failure = err instanceof Error ? err : new Error(String(err));
            },
          );
      }
      return scraped !== undefined || failure !== undefined;
    });
    if (failure !== undefined) throw failure;
    assert.ok(scraped, `the world was not delivered within 60 s: ${JSON.stringify(world.stats())}`);
    return scraped;
  } finally {
    await world.stop();
  }
}

const recordingRules = (): Query[] => PROM_RULE_FILES.flatMap((f) => ruleQueries(f, "promql"));

let catalogue: Catalogue | undefined;
async function theCatalogue(): Promise<Catalogue> {
  catalogue ??= buildCatalogue(await scrapeHealthyDaemon(), recordingRules());
  return catalogue;
}

test("every dashboard panel and rule names only metrics and labels the daemon exports", async () => {
  const c = await theCatalogue();
  const queries = allShippedQueries();
  assert.ok(queries.length > 40, `only ${queries.length} queries found`);
  assert.deepEqual(checkQueries(queries, c), []);
});

test("the failure-path series the alerts read are exported at 0 by a healthy daemon", async () => {
  const c = await theCatalogue();
  for (const name of [
    "sf2loki_loki_entries_dropped_total",
    "sf2loki_checkpoint_store_errors_total",
    "sf2loki_checkpoint_store_up",
    "sf2loki_egress_paused",
    "sf2loki_egress_budget_used_bytes",
    "sf2loki_deadletter_entries_total",
    "sf2loki_deadletter_evicted_total",
    "sf2loki_deadletter_write_failures_total",
  ])
    assert.ok(c.exported.has(name), `${name} is missing from /metrics`);
});

test("the promtool tests feed series shaped like the daemon's /metrics: names, labels, bucket bounds", async () => {
  const c = await theCatalogue();
  const series = promtoolCases().flatMap((t) =>
    (t.input_series ?? []).map((s) => ({ where: t.name, ...parseSeries(s.series) })),
  );
  assert.ok(series.length > 40, `only ${series.length} input series`);
  assert.deepEqual(seriesProblems(series, c), []);
  const made = (series: string) => ({ where: "x", ...parseSeries(series) });
  assert.deepEqual(
    seriesProblems(
      [
        made('sf2loki_ingest_lag_seconds_bucket{job="sf2loki",source="pubsub",le="1000"}'),
        made('sf2loki_loki_push_total{job="sf2loki",status="500"}'),
        made('sf2loki_pushes_total{job="sf2loki"}'),
        made('up{job="sf2loki",pod="a"}'),
      ],
      c,
    ),
    [
      "x: 'sf2loki_ingest_lag_seconds_bucket' has no bucket le=\"1000\"",
      "x: 'sf2loki_loki_push_total' has no label 'status'",
      "x: 'sf2loki_pushes_total' is not a series the daemon exports",
      "x: 'up' has no label 'pod'",
    ],
  );
});

test("docs/metrics.md lists exactly the instruments src/ declares, with the labels /metrics shows", async () => {
  assert.deepEqual(docsDrift(await theCatalogue()), []);
});

test("a dashboard naming a metric or label the daemon does not export fails the check", async () => {
  const c = await theCatalogue();
  const bogus = {
    panels: [
      {
        title: "bogus",
        datasource: { type: "prometheus" },
        targets: [
          { expr: 'sum(rate(sf2loki_events_ingestd_total{job=~"$job"}[$__rate_interval]))' },
          { expr: "sum by (tenant) (rate(sf2loki_loki_push_total[5m]))" },
          { expr: 'sf2loki_queue_depth{topic="x"}' },
        ],
      },
      { title: "logs", datasource: { type: "loki" }, targets: [{ expr: '{job="sf2loki", user="x"}' }] },
    ],
  };
  const rule: Query = {
    where: "bogus.yaml SomeAlert",
    language: "promql",
    expr: "increase(sf2loki_auth_errors_total[5m]) > 0 or sf2loki:nope:rate5m > 1",
    rule: { alert: "SomeAlert" },
  };
  // As if the daemon exported the auth error series only after a first failure.
  const late = { ...c, exported: new Map(c.exported) };
  late.exported.delete("sf2loki_auth_errors_total");
  assert.deepEqual(checkQueries([...dashboardQueries("bogus.json", bogus), rule], late), [
    "bogus.json \"bogus\": 'sf2loki_events_ingestd_total' is not a metric sf2loki exports",
    "bogus.json \"bogus\": groups by 'tenant', which none of its metrics carries",
    "bogus.json \"bogus\": 'sf2loki_queue_depth' has no label 'topic'",
    "bogus.json \"logs\": stream label 'user' is not one sf2loki sends",
    "bogus.yaml SomeAlert: 'sf2loki_auth_errors_total' is not exported by a healthy daemon from start-up",
    "bogus.yaml SomeAlert: 'sf2loki:nope:rate5m' is no recording rule we ship",
  ]);
});

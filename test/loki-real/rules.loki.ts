// The shipped Loki ruler file against the real Loki (#30). Loki's ruler loads every rule of it and
// Loki's own parser formats every expression. Then each rule, evaluated at now as the ruler does,
// fires on samples shaped like sf2loki's and stays quiet on a healthy org: EventLogFile rows made by
// the daemon's own ElfFileShaper and dated 1 to 5 hours back (as Salesforce's hourly files reach
// Loki), LoginEventStream events of the simulated org dated seconds back, and Threat Detection events
// of the simulated org: LoginAnomalyEvent streamed, UniversalAnomalyEventStore records polled and
// shaped by the daemon's own EntryShaper. Last, the ruler's own evaluation puts the firing tenant's
// alerts in pending (firing, for an alert without `for`) and leaves the healthy tenant's inactive.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { NO_TRANSFORMS } from "../../src/egress/transforms.ts";
import { LogEntry, type Labels } from "../../src/model.ts";
import { buildTopicSchema, generateEvent } from "../../src/sim/salesforce/events.ts";
import type { SimData } from "../../src/sim/salesforce-rest/data.ts";
import { appendObjectRecords } from "../../src/sim/salesforce-rest/generate.ts";
import { encodeJsonPush } from "../../src/sinks/loki/encode-json.ts";
import { groupStreams } from "../../src/sinks/receiving-loki/streams.ts";
import { ElfFileShaper } from "../../src/sources/eventlogfile/shape.ts";
import { EntryShaper } from "../../src/sources/shaping/entry.ts";
import { canonicalJson } from "../../src/sources/shaping/json.ts";
import { deriveLevel } from "../../src/sources/shaping/level.ts";
import { systemClock } from "../../src/util/clock.ts";
import { ELF_COLUMNS } from "../deploy/elf-columns.ts";
import { LOKI_RULE_FILES, ruleQueries } from "../deploy/queries.ts";
import { nowNs, realLokiForFile, type RealLoki } from "./support/real-loki.ts";

const FILE = LOKI_RULE_FILES[0]!;
const TEXT = readFileSync(new URL(`../../deploy/grafana/${FILE}`, import.meta.url), "utf8");
const RULES = ruleQueries(FILE, "logql");
const FIRING = "rules-firing";
const HEALTHY = "rules-healthy";
const shared = realLokiForFile({
  rules: { [FIRING]: { "sf2loki.yaml": TEXT }, [HEALTHY]: { "sf2loki.yaml": TEXT } },
});

const HOUR_MS = 3_600_000;
/** What the single-org daemon adds to every stream (app.ts), winning over the entry's labels. */
const STATIC: Labels = {
  job: "sf2loki",
  service_name: "sf2loki",
  environment: "production",
  sf_org_id: "00DSIM000000001AAA",
};

/** The 20260101100000.123 form of ELF's TIMESTAMP column. */
const compact = (iso: string): string => iso.slice(0, 23).replace(/[-:T]/g, "");

/** EventLogFile rows of `type`, each dated `ageMs` back from `nowMs`, as the daemon's shaper makes them. */
function elfEntries(
  type: string,
  nowMs: number,
  rows: { ageMs: number; cells: Record<string, string> }[],
): LogEntry[] {
  const header = ELF_COLUMNS[type]!;
  const shape = new ElfFileShaper(header, {
    type: { name: type, structured_metadata_fields: null, labels: [], sample: 1 },
    fields: [],
    timestampColumn: "TIMESTAMP_DERIVED",
    transforms: NO_TRANSFORMS,
    shaper: new EntryShaper("eventlogfile", systemClock),
  });
  return rows.map(({ ageMs, cells }, i) => {
    const iso = new Date(nowMs - ageMs).toISOString();
    const row: Record<string, string> = {
      EVENT_TYPE: type,
      TIMESTAMP: compact(iso),
      TIMESTAMP_DERIVED: iso,
      REQUEST_ID: `rules-${type}-${i}`,
      ORGANIZATION_ID: "00DSIM000000001",
      ...cells,
    };
    const entry = shape.entry(
      header.map((c) => row[c] ?? ""),
      undefined,
      { key: `eventlogfile:${type}`, value: "{}" },
    )!;
    entry.labels = { ...entry.labels, ...STATIC };
    return entry;
  });
}

/** LoginEventStream events of the simulated org, `failed` of them not Success, dated 20 s to 3 min back. */
function loginEvents(nowMs: number, total: number, failed: number): LogEntry[] {
  const schema = buildTopicSchema("/event/LoginEventStream");
  return Array.from({ length: total }, (_, i) => {
    const p = generateEvent(30, schema, i + 1, nowMs - 20_000 - i * 1000);
    p.Status = i < failed ? "Invalid Password" : "Success";
    return streamedEntry("LoginEventStream", p);
  });
}

/** A Pub/Sub event of the simulated org as the Pub/Sub task ships it: dated at EventDate, JSON line. */
function streamedEntry(eventType: string, p: Record<string, unknown>): LogEntry {
  return new LogEntry({
    timestampNs: BigInt(p.EventDate as number) * 1_000_000n,
    labels: { source: "pubsub", event_type: eventType, ...STATIC },
    line: canonicalJson(p),
    structuredMetadata: { level: deriveLevel(p) },
    checkpoint: { key: `pubsub:/event/${eventType}`, value: "" },
  });
}

/** Threat Detection: `high` of each set scored 95 (all of one user), the others 40. */
const ATTACKED = "mallory@example.com";

/**
 * 10 LoginAnomalyEvent events streamed 1 to 10 minutes back, as the Pub/Sub task shapes them, and 12
 * UniversalAnomalyEventStore records polled, as eventlog_objects shapes them (its subtypes cycle).
 */
function anomalies(nowMs: number, high: number): LogEntry[] {
  const schema = buildTopicSchema("/event/LoginAnomalyEvent");
  const streamed = Array.from({ length: 10 }, (_, i) => {
    const p = generateEvent(30, schema, i + 1, nowMs - 60_000 - i * 50_000);
    if (i < high) Object.assign(p, { Score: 95, Username: ATTACKED });
    else p.Score = 40;
    return streamedEntry("LoginAnomalyEvent", p);
  });
  const store = "UniversalAnomalyEventStore";
  const data = { objects: {} } as SimData;
  const records = appendObjectRecords(data, store, 12, {
    prefix: "0Y0",
    fromMs: nowMs - 10 * 60_000,
    toMs: nowMs - 60_000,
  });
  const shaper = new EntryShaper("eventlog_objects", systemClock);
  const polled = records.map((r, i) => {
    if (i < high) Object.assign(r, { Score: 95, Username: ATTACKED });
    else r.Score = 40;
    const entry = shaper.entry({
      payload: { attributes: { type: store }, ...r },
      labels: { source: "eventlog_objects", event_type: store },
      metadataFields: [],
      timestampFields: ["EventDate", "CreatedDate"],
      fallbackNs: undefined,
      checkpoint: { key: `eventlog_objects:${store}`, value: "{}" },
    });
    entry.labels = { ...entry.labels, ...STATIC };
    return entry;
  });
  return [...streamed, ...polled];
}

/** 40 Apex callouts spread over 1 to 5 hours back, `failed` of them with SUCCESS=0. */
function callouts(nowMs: number, failed: number): LogEntry[] {
  return elfEntries(
    "ApexCallout",
    nowMs,
    Array.from({ length: 40 }, (_, i) => ({
      ageMs: HOUR_MS + i * 6 * 60_000,
      cells: {
        SUCCESS: i % 4 === 0 && i / 4 < failed ? "0" : "1",
        URL: "https://api.example.com/orders",
        METHOD: "POST",
        TIME: String(100 + i),
      },
    })),
  );
}

/** API Total Usage: 30 REST and 12 SOAP calls 1 to 5 hours back, and 4 REST calls 7 hours back. */
function apiUsage(nowMs: number): LogEntry[] {
  const rows = [
    ...Array.from({ length: 30 }, (_, i) => ({ ageMs: HOUR_MS + i * 7 * 60_000, family: "REST" })),
    ...Array.from({ length: 12 }, (_, i) => ({ ageMs: HOUR_MS + i * 17 * 60_000, family: "SOAP" })),
    ...Array.from({ length: 4 }, (_, i) => ({ ageMs: 7 * HOUR_MS + i * 60_000, family: "REST" })),
  ];
  return elfEntries(
    "ApiTotalUsage",
    nowMs,
    rows.map((r) => ({
      ageMs: r.ageMs,
      cells: { API_FAMILY: r.family, API_RESOURCE: "query", CLIENT_NAME: "etl" },
    })),
  );
}

/** One push, each stream oldest entry first: as the daemon sends a file's rows, in time order. */
async function push(loki: RealLoki, tenant: string, entries: LogEntry[]): Promise<void> {
  entries.sort((a, b) => (a.timestampNs < b.timestampNs ? -1 : a.timestampNs > b.timestampNs ? 1 : 0));
  const res = await fetch(loki.pushUrl, {
    method: "POST",
    headers: { "content-type": "application/json", "X-Scope-OrgID": tenant },
    body: encodeJsonPush(groupStreams(entries)),
  });
  assert.equal(res.status, 204, `push to ${tenant}: ${await res.text()}`);
}

/** A rule's result keyed by its labels other than job ("" for none), as the ruler would record it. */
async function evaluate(
  loki: RealLoki,
  tenant: string,
  expr: string,
  atNs: bigint,
): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const { metric, value } of await loki.reader(tenant).instant(expr, atNs)) {
    const key = Object.entries(metric)
      .filter(([k]) => k !== "job")
      .map(([, v]) => v)
      .join("|");
    out[key] = Math.round(value * 1000) / 1000;
  }
  return out;
}

/** What each shipped rule gives on the samples: the firing tenant's, then the healthy one's. */
const EXPECTED: Record<string, [Record<string, number>, Record<string, number>]> = {
  "sf2loki:apex_callout_errors:count6h": [{ "": 10 }, { "": 1 }],
  "sf2loki:api_usage:count6h": [
    { REST: 30, SOAP: 12 },
    { REST: 30, SOAP: 12 },
  ],
  "sf2loki:login_failures:count5m": [{ "": 60 }, { "": 5 }],
  Sf2lokiApexCalloutErrorRate: [{ "": 0.25 }, {}],
  Sf2lokiLoginFailureSpike: [{ "": 60 }, {}],
  // By AnomalySubType (UniversalAnomalyEvent's only), Username and event_type; the first three
  // Universal records are ApiAnomaly, CredentialStuffing and GuestUserAnomaly.
  Sf2lokiThreatDetectionHighScore: [
    {
      [`${ATTACKED}|LoginAnomalyEvent`]: 3,
      [`ApiAnomaly|${ATTACKED}|UniversalAnomalyEventStore`]: 1,
      [`CredentialStuffing|${ATTACKED}|UniversalAnomalyEventStore`]: 1,
      [`GuestUserAnomaly|${ATTACKED}|UniversalAnomalyEventStore`]: 1,
    },
    {},
  ],
};

interface RulerRule {
  name: string;
  type: "alerting" | "recording";
  state?: string;
  health: string;
  lastError: string;
  lastEvaluation: string;
}

async function rulerRules(loki: RealLoki, tenant: string): Promise<{ name: string; rules: RulerRule[] }[]> {
  const res = await fetch(`${loki.url}/prometheus/api/v1/rules`, { headers: { "X-Scope-OrgID": tenant } });
  assert.equal(res.status, 200);
  return ((await res.json()) as { data: { groups: { name: string; rules: RulerRule[] }[] } }).data.groups;
}

async function formatQuery(loki: RealLoki, query: string): Promise<{ status: string; error?: string }> {
  const res = await fetch(
    `${loki.url}/loki/api/v1/format_query?${new URLSearchParams({ query }).toString()}`,
  );
  return (await res.json()) as { status: string; error?: string };
}

test(
  "the Loki ruler loads every rule of the shipped file and Loki parses every expression",
  { skip: shared.missing },
  async () => {
    const loki = shared.loki;
    const loaded = (await rulerRules(loki, FIRING)).flatMap((g) => g.rules.map((r) => r.name)).sort();
    const shipped = RULES.map((r) => r.rule!.alert ?? r.rule!.record!).sort();
    assert.deepEqual(loaded, shipped, "the ruler holds exactly the file's rules");
    assert.doesNotMatch(
      await readFile(join(loki.dir, "loki.log"), "utf8"),
      /unable to list rules|error parsing/,
    );
    for (const r of RULES) {
      const parsed = await formatQuery(loki, r.expr);
      assert.equal(parsed.status, "success", `${r.where}: ${parsed.error ?? ""}`);
    }
    const broken = await formatQuery(loki, 'sum(count_over_time({job="sf2loki"} | json [5m]) >');
    assert.equal(broken.status, "invalid-query", "Loki's parser refuses a broken expression");
  },
);

test(
  "every rule fires on samples shaped like sf2loki's and stays quiet on a healthy org; the ruler agrees",
  { skip: shared.missing },
  async () => {
    const loki = shared.loki;
    const nowMs = Date.now();
    await push(loki, FIRING, [
      ...callouts(nowMs, 10),
      ...apiUsage(nowMs),
      ...loginEvents(nowMs, 100, 60),
      ...anomalies(nowMs, 3),
    ]);
    await push(loki, HEALTHY, [
      ...callouts(nowMs, 1),
      ...apiUsage(nowMs),
      ...loginEvents(nowMs, 100, 5),
      ...anomalies(nowMs, 0),
    ]);
    // Rows dated more than query_ingesters_within (3h) back are read from flushed chunks only.
    await loki.flush();
    const flushedAt = Date.now();

    const atNs = nowNs();
    assert.deepEqual(
      Object.keys(EXPECTED).sort(),
      RULES.map((r) => r.rule!.alert ?? r.rule!.record!).sort(),
      "an expectation per rule",
    );
    for (const r of RULES) {
      const name = r.rule!.alert ?? r.rule!.record!;
      const [firing, healthy] = EXPECTED[name]!;
      assert.deepEqual(await evaluate(loki, FIRING, r.expr, atNs), firing, `${name} on the failing org`);
      assert.deepEqual(await evaluate(loki, HEALTHY, r.expr, atNs), healthy, `${name} on the healthy org`);
    }

    // The ruler's own evaluation, once per group interval (1m): alerts pending (their `for` running)
    // on the failing org, inactive on the healthy one, every rule evaluated without an error.
    const evaluatedSincePush = (rules: RulerRule[]): boolean =>
      rules.every((r) => Date.parse(r.lastEvaluation) > flushedAt);
    const deadline = Date.now() + 150_000;
    let seen: Record<string, RulerRule[]>;
    for (;;) {
      seen = {
        [FIRING]: (await rulerRules(loki, FIRING)).flatMap((g) => g.rules),
        [HEALTHY]: (await rulerRules(loki, HEALTHY)).flatMap((g) => g.rules),
      };
      if (Object.values(seen).every(evaluatedSincePush)) break;
      assert.ok(
        Date.now() < deadline,
        `the ruler did not evaluate every rule within 150 s: ${JSON.stringify(seen)}`,
      );
      await delay(2000);
    }
    for (const [tenant, rules] of Object.entries(seen)) {
      for (const r of rules) {
        assert.deepEqual([r.health, r.lastError], ["ok", ""], `${tenant} ${r.name}`);
        if (r.type !== "alerting") continue;
        const held = RULES.find((q) => q.rule!.alert === r.name)!.rule!.for !== undefined;
        assert.equal(
          r.state,
          tenant === HEALTHY ? "inactive" : held ? "pending" : "firing",
          `${tenant} ${r.name}`,
        );
      }
    }
  },
);

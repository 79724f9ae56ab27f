// The Grafana kit as shipped: the dashboard JSON equals what `npm run dashboards` generates from
// deploy/grafana/src, every query parses with Grafana's PromQL and LogQL grammars, and every alert
// links a runbook section that exists in docs/observability.md.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { DASHBOARDS_DIR, dashboards, render } from "../../deploy/grafana/src/dashboards.ts";
import { THREAT_EVENT_TYPES } from "../../deploy/grafana/src/security-access.ts";
import { buildTopicSchema } from "../../src/sim/salesforce/events.ts";
import { THREAT_EVENTS } from "../../src/sim/salesforce/threat-detection.ts";
import { LABEL_ALLOWLIST } from "../../src/sinks/receiving-loki/labels.ts";
import { ELF_COLUMNS } from "./elf-columns.ts";
import { promtoolCases, untestedAlerts } from "./promtool-tests.ts";
import { logqlShape, parseQuery } from "./query-syntax.ts";
import { allShippedQueries, shippedDashboards, type Query } from "./queries.ts";

test("the dashboard JSON files are exactly what `npm run dashboards` generates", () => {
  const built = dashboards();
  const onDisk = readdirSync(DASHBOARDS_DIR)
    .filter((f) => f.endsWith(".json"))
    .sort();
  assert.deepEqual(onDisk, Object.keys(built).sort(), "run `npm run dashboards`");
  for (const [file, d] of Object.entries(built))
    assert.equal(
      readFileSync(new URL(file, DASHBOARDS_DIR), "utf8"),
      render(d),
      `${file} drifted: run \`npm run dashboards\``,
    );
});

test("dashboards have unique uids, the shared variables, and a datasource on every query panel", () => {
  const uids = new Set<string>();
  for (const [file, d] of Object.entries(shippedDashboards()) as [string, Record<string, unknown>][]) {
    const uid = d.uid as string;
    assert.ok(!uids.has(uid), `${file}: duplicate uid ${uid}`);
    uids.add(uid);
    const vars = (d.templating as { list: { name: string }[] }).list.map((v) => v.name);
    assert.ok(vars.includes("job"), `${file}: no job variable`);
    const panels = d.panels as {
      title: string;
      type: string;
      datasource?: { uid?: string };
      targets?: unknown[];
    }[];
    assert.ok(panels.length >= 6, `${file}: only ${panels.length} panels`);
    for (const p of panels.filter((p) => (p.targets ?? []).length > 0)) {
      const ds = p.datasource?.uid ?? "";
      assert.match(ds, /^\$\{ds_(prom|loki)\}$/, `${file} "${p.title}": datasource ${ds}`);
      assert.ok(vars.includes(ds.slice(2, -1)), `${file} "${p.title}": variable ${ds} is not defined`);
    }
  }
});

test("every PromQL and LogQL expression in the dashboards and rule files parses", () => {
  const queries = allShippedQueries();
  const byLanguage = { promql: 0, logql: 0 };
  const problems: string[] = [];
  for (const q of queries) {
    byLanguage[q.language]++;
    for (const e of parseQuery(q).errors) problems.push(`${q.where}: ${e}`);
  }
  assert.deepEqual(problems, []);
  assert.ok(byLanguage.promql >= 30 && byLanguage.logql >= 20, JSON.stringify(byLanguage));
});

test("the parse check rejects a broken query in either language", () => {
  const broken: Query[] = [
    { where: "x", language: "logql", expr: 'sum(count_over_time({job="sf2loki"} | json [5m]) >' },
    { where: "y", language: "logql", expr: '{job="sf2loki"} | json | unwrap' },
    { where: "z", language: "promql", expr: "sum by (job (rate(sf2loki_loki_push_total[5m]))" },
  ];
  for (const q of broken) assert.notDeepEqual(parseQuery(q).errors, [], q.expr);
});

/** Each EventLogFile query's fields that are no column of its type's file. */
function unknownElfColumns(queries: readonly Query[]): string[] {
  const problems: string[] = [];
  for (const q of queries.filter((q) => q.language === "logql")) {
    const { ranges, fields } = logqlShape(q, LABEL_ALLOWLIST);
    const types = new Set(
      ranges.filter((r) => r.matchers.source === "eventlogfile").map((r) => r.matchers.event_type ?? "?"),
    );
    if (types.size === 0) continue;
    if (types.size > 1) {
      problems.push(`${q.where}: reads several EventLogFile types (${[...types].join(", ")}); one per query`);
      continue;
    }
    const [type] = [...types] as [string];
    const columns = ELF_COLUMNS[type];
    if (!columns) {
      problems.push(`${q.where}: EventLogFile type ${type} is not in test/deploy/elf-columns.ts`);
      continue;
    }
    for (const f of fields)
      if (!columns.includes(f)) problems.push(`${q.where}: the ${type} EventLogFile has no column ${f}`);
  }
  return problems;
}

test("every EventLogFile column a dashboard or rule reads is a column of that type's file", () => {
  const queries = allShippedQueries();
  assert.ok(
    queries.some((q) => q.expr.includes('source="eventlogfile"')),
    "no EventLogFile query found",
  );
  assert.deepEqual(unknownElfColumns(queries), []);
  // The check sees a column the file lacks (upstream #107: the Login file has no country).
  const login = '{job="sf2loki", source="eventlogfile", event_type="Login"}';
  assert.deepEqual(
    unknownElfColumns([
      {
        where: "x",
        language: "logql",
        expr: `sum by (CLIENT_IP, COUNTRY_CODE) (count_over_time(${login} | json | LOGIN_STATUS != "LOGIN_NO_ERROR" [5m]))`,
      },
    ]),
    ["x: the Login EventLogFile has no column COUNTRY_CODE"],
  );
});

/** The fields of the newer Threat Detection events, as the simulated org's schemas hold the documented ones. */
const THREAT_FIELD_NAMES = new Set(
  THREAT_EVENTS.flatMap((e) =>
    (JSON.parse(buildTopicSchema(`/event/${e}`).schemaJson) as { fields: { name: string }[] }).fields.map(
      (f) => f.name,
    ),
  ),
);

/** Each Threat Detection query's fields that no Threat Detection event carries. */
function unknownThreatFields(queries: readonly Query[]): string[] {
  const problems: string[] = [];
  for (const q of queries.filter((q) => q.language === "logql" && /AnomalyEvent/.test(q.expr))) {
    for (const f of logqlShape(q, LABEL_ALLOWLIST).fields)
      if (!THREAT_FIELD_NAMES.has(f)) problems.push(`${q.where}: no Threat Detection event has a field ${f}`);
  }
  return problems;
}

test("every Threat Detection panel and rule reads documented fields over one shared set of event types", () => {
  const queries = allShippedQueries().filter((q) => /AnomalyEvent/.test(q.expr));
  assert.ok(
    queries.some((q) => q.rule?.alert === "Sf2lokiThreatDetectionHighScore"),
    "the alert ships",
  );
  assert.ok(queries.filter((q) => q.rule === undefined).length >= 4, "the dashboard row ships");
  assert.deepEqual(unknownThreatFields(queries), []);
  for (const q of queries)
    assert.ok(
      q.expr.includes(`event_type=~"${THREAT_EVENT_TYPES}"`) ||
        q.expr.includes('event_type=~"UniversalAnomalyEvent(Store)?"'),
      `${q.where}: selects the Threat Detection event types the dashboard defines`,
    );
  // The check sees a field the events lack (ApiAnomalyEvent's Operation is none of theirs).
  assert.deepEqual(
    unknownThreatFields([
      {
        where: "x",
        language: "logql",
        expr: `sum by (Operation) (count_over_time({job="sf2loki", event_type=~"${THREAT_EVENT_TYPES}"} | json | Score > 90 [5m]))`,
      },
    ]),
    ["x: no Threat Detection event has a field Operation"],
  );
});

/**
 * EventLogFile rows reach Loki 1 to 3 hours after their event and are stored at its time (upstream
 * #106): a rule can only see them through a window that spans that delay. Dashboards are exempt:
 * their range is the operator's.
 */
const ELF_MIN_WINDOW_MS = 6 * 3_600_000;

function shortElfWindows(rules: readonly Query[]): string[] {
  const problems: string[] = [];
  for (const q of rules.filter((r) => r.language === "logql")) {
    for (const r of logqlShape(q, LABEL_ALLOWLIST).ranges)
      if (r.matchers.source === "eventlogfile" && (r.rangeMs ?? 0) < ELF_MIN_WINDOW_MS)
        problems.push(`${q.where}: an EventLogFile window of ${String(r.rangeMs)} ms can never hold a row`);
  }
  return problems;
}

test("every Loki rule over an EventLogFile stream reads a window that spans the files' delay", () => {
  const rules = allShippedQueries().filter((q) => q.rule !== undefined);
  assert.ok(
    rules.some((q) => q.expr.includes('source="eventlogfile"')),
    "no EventLogFile rule found",
  );
  assert.deepEqual(shortElfWindows(rules), []);
  const tenMinutes: Query = {
    where: "x",
    language: "logql",
    expr: 'sum(count_over_time({job="sf2loki", source="eventlogfile", event_type="ApexCallout"} | json [10m]))',
    rule: { alert: "X" },
  };
  assert.deepEqual(shortElfWindows([tenMinutes]), [
    "x: an EventLogFile window of 600000 ms can never hold a row",
  ]);
});

test("every Prometheus alert has a promtool case where it fires and one where it stays quiet", () => {
  const alerts = allShippedQueries()
    .filter((q) => q.language === "promql" && q.rule?.alert !== undefined)
    .map((q) => q.rule!.alert!);
  assert.ok(alerts.includes("Sf2lokiExporterDown"), "the absent()/up guard ships");
  assert.deepEqual(untestedAlerts(alerts, promtoolCases()), []);
  assert.deepEqual(
    untestedAlerts(
      ["A", "B"],
      [{ name: "x", alert_rule_test: [{ eval_time: "1m", alertname: "A", exp_alerts: [] }] }],
    ),
    [
      "A: no promtool case makes it fire",
      "B: no promtool case makes it fire",
      "B: no promtool case shows it quiet",
    ],
  );
});

/** GitHub's anchor for a Markdown heading. */
const anchor = (heading: string): string =>
  heading
    .trim()
    .toLowerCase()
    .replace(/[^\w\- ]/g, "")
    .replace(/ /g, "-");

test("every alert has a severity and a runbook_url into a section of docs/observability.md", () => {
  const doc = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8");
  const anchors = new Set([...doc.matchAll(/^#{1,6} (.+)$/gm)].map((m) => anchor(m[1]!)));
  const alerts = allShippedQueries().filter((q) => q.rule?.alert !== undefined);
  assert.ok(alerts.length >= 9, `only ${alerts.length} alerts`);
  for (const a of alerts) {
    assert.ok(["warning", "critical"].includes(a.rule?.labels?.severity ?? ""), `${a.where}: severity`);
    const url = a.rule?.annotations?.runbook_url ?? "";
    const m = /^docs\/observability\.md#(.+)$/.exec(url);
    assert.ok(m, `${a.where}: runbook_url '${url}'`);
    assert.ok(anchors.has(m[1]!), `${a.where}: docs/observability.md has no section #${m[1]!}`);
    assert.equal(
      m[1],
      a.rule!.alert!.toLowerCase(),
      `${a.where}: the runbook section is named after the alert`,
    );
  }
});

test("docs/observability.md states the alert and recording-rule counts the rule files hold", () => {
  const doc = readFileSync(new URL("../../docs/observability.md", import.meta.url), "utf8");
  const rules = allShippedQueries().filter((q) => q.rule !== undefined);
  for (const [lang, pattern] of [
    ["promql", /rules\/prometheus\/\*\.yaml`\s*\|\s*(\d+) alerts and (\d+) recording rules/],
    ["logql", /rules\/loki\/\*\.yaml`\s*\|\s*(\d+) alerts and (\d+) recording rules/],
  ] as const) {
    const m = pattern.exec(doc);
    assert.ok(m, `docs/observability.md names the ${lang} rule counts`);
    const ours = rules.filter((q) => q.language === lang);
    assert.deepEqual(
      [Number(m[1]), Number(m[2])],
      [ours.filter((q) => q.rule?.alert).length, ours.filter((q) => q.rule?.record).length],
      `${lang}: alerts and recording rules as the doc says`,
    );
  }
});

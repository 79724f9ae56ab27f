// The docs hold to a real /metrics scrape in both directions: metric-names.test.ts shows every label
// exported is documented; here every label docs/metrics.md documents for a metric shows on it, and
// every label docs/observability.md says the per-org series carry is on them. The daemon runs two orgs,
// one on its own Loki destination that refuses every line, under a tenant id, with a (non-binding)
// egress cap: so the per-org, per-tenant, per-destination and failure-path labels all occur. Labels
// that only another set-up makes are listed below with that set-up.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { tempDir } from "../support/tmp.ts";
import { common, orgTree, runDaemon, startTwoOrgs } from "../support/two-orgs.ts";
import {
  declaredInstruments,
  documentedMetrics,
  expositionNames,
  parseExposition,
} from "./metric-catalogue.ts";

const OBSERVABILITY = new URL("../../docs/observability.md", import.meta.url);
const TOPIC = "/event/LoginEventStream";

/** Documented labels this scrape cannot show, each with the set-up that makes it. */
const ELSEWHERE: Record<string, Record<string, string>> = {
  sf2loki_watchdog_stalled: { org: "sharding (test/coordinate/)" },
  sf2loki_watchdog_wedged: { org: "sharding (test/coordinate/)" },
  sf2loki_watchdog_resignations: { org: "sharding (test/coordinate/)" },
  sf2loki_reconcile_resumes: { reason: "a resume whose Loki lookup degrades (test/pipeline/reconcile*)" },
};

/** Base name → the labels its series show in `scrape` (undefined: not exported there). */
function labelsShown(scrape: string): Map<string, Set<string>> {
  const exported = parseExposition(scrape);
  const out = new Map<string, Set<string>>();
  for (const [base, kind] of declaredInstruments()) {
    const names = expositionNames(base, kind).filter((n) => exported.has(n));
    if (names.length === 0) continue;
    out.set(base, new Set(names.flatMap((n) => [...exported.get(n)!]).filter((l) => l !== "le")));
  }
  return out;
}

/** Documented labels of exported metrics that no series of theirs shows. */
function undocumentedAbsences(
  documented: Map<string, Set<string>>,
  shown: Map<string, Set<string>>,
): string[] {
  const problems: string[] = [];
  for (const [base, labels] of documented) {
    const seen = shown.get(base);
    if (seen === undefined) continue;
    for (const l of labels)
      if (!seen.has(l) && ELSEWHERE[base]?.[l] === undefined)
        problems.push(`docs/metrics.md gives ${base} the label '${l}', which /metrics never shows on it`);
  }
  return problems;
}

/** docs/observability.md's per-org paragraph: the metrics it names and the labels it says they carry. */
function perOrgClaim(): { metrics: string[]; labels: string[] } {
  const doc = readFileSync(OBSERVABILITY, "utf8");
  const paragraph = /^Ingest rate and lag are per org too:[\s\S]*?\n\n/m.exec(doc)?.[0];
  assert.ok(paragraph, "docs/observability.md has its per-org paragraph");
  const names = [...paragraph.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]!);
  return {
    metrics: names.filter((n) => n.startsWith("sf2loki_")),
    labels: names.filter((n) => !n.startsWith("sf2loki_")),
  };
}

async function scrapeTwoOrgs(t: import("node:test").TestContext): Promise<string> {
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  // emea's own destination: Loki's max_line_size at 100 bytes refuses every line (drops, dead letters).
  const refusing = await startLokiReceiver({ maxLineBytes: 100 });
  t.after(() => refusing.stop());
  const orgs = await startTwoOrgs(t, {
    topics: [TOPIC],
    eventsPerTopic: 20,
    polling: {
      objects: { LoginEvent: { records: 10 } },
      eventLogFiles: { API: { rows: 10, files: 1 } },
      apexLogs: 3,
    },
  });
  const cap = { egress: { max_bytes_per_second: 1_000_000_000 } };
  const tree = {
    orgs: [
      orgTree("prod", orgs.prod, { pubsub: true, topic: TOPIC }),
      orgTree("emea", orgs.emea, { pubsub: true, topic: TOPIC, sink: { url: refusing.pushUrl, ...cap } }),
    ],
    ...common(join(tempDir(), "state.json"), { url: loki.pushUrl, tenant_id: "salesforce", ...cap }),
    salesforce: null,
  };
  for (const o of tree.orgs) (o.salesforce as Record<string, unknown>).limits = { enabled: true };
  let scrape = "";
  await runDaemon(tree, {
    what: "prod delivered, and emea's lines dropped and dead-lettered",
    until: async (app) => {
      if (loki.entries().length < 20 + 10 + 10 + 3) return false;
      scrape = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
      return (
        /sf2loki_loki_entries_dropped_total\{[^}]*reason=/.test(scrape) &&
        /sf2loki_deadletter_entries_total\{[^}]*reason=/.test(scrape)
      );
    },
  });
  return scrape;
}

test("every label the docs give a metric shows on a /metrics scrape of a daemon that exercises it", async (t) => {
  const scrape = await scrapeTwoOrgs(t);
  const shown = labelsShown(scrape);
  const documented = documentedMetrics(new Set(declaredInstruments().keys()));
  assert.deepEqual(undocumentedAbsences(documented, shown), []);

  for (const [base, labels] of Object.entries(ELSEWHERE))
    for (const l of Object.keys(labels))
      assert.ok(
        documented.get(base)?.has(l) && !shown.get(base)?.has(l),
        `ELSEWHERE lists ${base} '${l}', which is undocumented or shows here after all: drop it from the list`,
      );

  const claim = perOrgClaim();
  assert.ok(claim.metrics.length >= 2 && claim.labels.includes("org"), JSON.stringify(claim));
  for (const m of claim.metrics)
    for (const l of claim.labels)
      assert.ok(
        shown.get(m)?.has(l),
        `docs/observability.md says ${m} carries '${l}'; /metrics shows ${[...(shown.get(m) ?? [])].join(", ")}`,
      );

  // The check sees a documented label that never appears, and a metric the scrape lacks is not judged.
  const wrong = documentedMetrics(
    new Set(["sf2loki_ingest_lag_seconds", "sf2loki_shard_leader"]),
    "| `sf2loki_ingest_lag_seconds` | histogram | `source`, `tenant` | x |\n| `sf2loki_shard_leader` | gauge | `org` | x |\n",
  );
  assert.deepEqual(undocumentedAbsences(wrong, shown), [
    "docs/metrics.md gives sf2loki_ingest_lag_seconds the label 'tenant', which /metrics never shows on it",
  ]);
});

// Per-org Loki destinations (#123), end to end: two simulated orgs, every source running in both, the
// daemon in-process, and simulated Loki receivers that keep the tenant each entry was pushed as. Each
// org's events arrive under its own tenant only (on one Loki, then on two), and an org's own daily
// budget is persisted under its own key, survives a restart, and pauses only that org's destination.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { utcDate } from "../../src/egress/budget.ts";
import { startLokiReceiver, type LokiReceiver } from "../../src/sim/loki.ts";
import type { SimPollingData } from "../../src/sim/salesforce-rest/index.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import { common, orgTree as orgTreeOf, runDaemon, startTwoOrgs, type TwoOrgs } from "../support/two-orgs.ts";
import { tempDir } from "../support/tmp.ts";

const TOPIC = "/event/LoginEventStream";
const EVENTS = 20;
const POLLING: SimPollingData = {
  objects: { LoginEvent: { records: 30 } },
  eventLogFiles: { API: { rows: 50, files: 1 } },
  apexLogs: 10,
};
/** What one org holds: Pub/Sub events, polled records, ELF rows, ApexLogs. */
const PER_ORG = EVENTS + 30 + 50 + 10;

function orgTree(
  name: string,
  org: SimOrg,
  opts: { pubsub: boolean; sink?: Record<string, unknown> },
): Record<string, unknown> {
  return orgTreeOf(name, org, { ...opts, topic: TOPIC });
}

function startOrgs(t: TestContext): Promise<TwoOrgs> {
  return startTwoOrgs(t, { topics: [TOPIC], eventsPerTopic: EVENTS, polling: POLLING });
}

async function receiver(t: TestContext): Promise<LokiReceiver> {
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  return loki;
}

/** `tenant/org` → entries, over everything a receiver accepted. */
function byTenantAndOrg(loki: LokiReceiver): Record<string, number> {
  const out: Record<string, number> = {};
  for (const e of loki.entries()) {
    const k = `${e.tenant}/${e.labels.org ?? "-"}`;
    out[k] = (out[k] ?? 0) + 1;
  }
  return out;
}

test("two orgs, two tenants on one Loki: each org's events arrive under its own X-Scope-OrgID only", async (t) => {
  const orgs = await startOrgs(t);
  const loki = await receiver(t);
  const statePath = join(tempDir(), "state.json");
  let status: Record<string, unknown> = {};
  await runDaemon(
    {
      orgs: [
        orgTree("prod", orgs.prod, { pubsub: true }),
        orgTree("emea", orgs.emea, { pubsub: true, sink: { tenant_id: "tenant-emea" } }),
      ],
      ...common(statePath, { url: loki.pushUrl, tenant_id: "tenant-main" }),
    },
    {
      pollOnce: true,
      what: `${2 * PER_ORG} entries`,
      until: async (app) => {
        if (loki.entries().length < 2 * PER_ORG) return false;
        status = (await (await fetch(`${app.healthUrl()!}/statusz`)).json()) as Record<string, unknown>;
        return true;
      },
    },
  );
  assert.deepEqual(byTenantAndOrg(loki), { "tenant-main/prod": PER_ORG, "tenant-emea/emea": PER_ORG });
  for (const r of loki.requests) {
    assert.ok(r.tenant === "tenant-main" || r.tenant === "tenant-emea", `request tenant ${r.tenant}`);
    assert.equal(r.headers.authorization, undefined);
  }
  const lanes = Object.keys((status.pipeline as { lanes: Record<string, unknown> }).lanes).sort();
  assert.deepEqual(lanes, ["bulk", "bulk@emea", "streaming", "streaming@emea"]);
  assert.deepEqual(
    (status.loki_destinations as { destination: string; orgs: string[]; tenant_id: string }[]).map((d) => [
      d.destination,
      d.orgs,
      d.tenant_id,
    ]),
    [
      ["<top-level>", ["prod"], "tenant-main"],
      ["emea", ["emea"], "tenant-emea"],
    ],
  );
});

test("an org on its own Loki: each receiver sees only its org, and the top-level token never leaves for the other", async (t) => {
  const orgs = await startOrgs(t);
  const main = await receiver(t);
  const other = await receiver(t);
  await runDaemon(
    {
      orgs: [
        orgTree("prod", orgs.prod, { pubsub: true }),
        orgTree("emea", orgs.emea, { pubsub: true, sink: { url: other.pushUrl, tenant_id: "emea-b" } }),
      ],
      ...common(join(tempDir(), "state.json"), {
        url: main.pushUrl,
        tenant_id: "main",
        auth_token: "top-secret",
      }),
    },
    {
      pollOnce: true,
      what: `${PER_ORG} entries at each receiver`,
      until: () => main.entries().length >= PER_ORG && other.entries().length >= PER_ORG,
    },
  );
  assert.deepEqual(byTenantAndOrg(main), { "main/prod": PER_ORG });
  assert.deepEqual(byTenantAndOrg(other), { "emea-b/emea": PER_ORG });
  const basic = `Basic ${Buffer.from("main:top-secret").toString("base64")}`;
  for (const r of main.requests) assert.equal(r.headers.authorization, basic);
  for (const r of other.requests) {
    assert.equal(r.headers.authorization, undefined, "no credentials sent to the org's own Loki");
    assert.equal(r.headers["x-scope-orgid"], "emea-b");
  }
});

test("per-destination budgets: persisted under their own keys, continued after a restart, a spent one pauses only its orgs", async (t) => {
  const orgs = await startOrgs(t);
  const loki = await receiver(t);
  const statePath = join(tempDir(), "state.json");
  const today = utcDate(Date.now());
  const tree = (pubsub: boolean, emeaBudget: number): Record<string, unknown> => ({
    orgs: [
      orgTree("prod", orgs.prod, { pubsub }),
      orgTree("emea", orgs.emea, {
        pubsub,
        sink: { tenant_id: "tenant-emea", egress: { daily_byte_budget: emeaBudget } },
      }),
    ],
    ...common(statePath, {
      url: loki.pushUrl,
      tenant_id: "tenant-main",
      egress: { daily_byte_budget: 50_000_000 },
    }),
  });

  // 1. The polling sources only, to the end: each destination counts its own bytes under its own key.
  await runDaemon(tree(false, 40_000_000), { pollOnce: true });
  const bytesOf = (tenant: string): number =>
    loki
      .entries()
      .filter((e) => e.tenant === tenant)
      .reduce((n, e) => n + Buffer.byteLength(e.line), 0);
  const mainBytes = bytesOf("tenant-main");
  const emeaBytes = bytesOf("tenant-emea");
  assert.ok(mainBytes > 0 && emeaBytes > 0);
  const doc1 = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
  assert.equal(doc1["egress:budget"], `{"date": "${today}", "bytes": ${String(mainBytes)}}`);
  assert.equal(doc1["egress:budget:emea"], `{"date": "${today}", "bytes": ${String(emeaBytes)}}`);

  // 2. A restart with emea's budget lowered to what it already spent, and Pub/Sub on for both orgs:
  // prod's events flow; emea's are held, with their checkpoints, and the daemon says which destination.
  loki.reset();
  let status: { egress: Record<string, unknown> } = { egress: {} };
  let metrics = "";
  let ready = "";
  await runDaemon(tree(true, emeaBytes), {
    what: "prod's Pub/Sub events and emea's pause",
    until: async (app) => {
      const prodEvents = loki.entries({ org: "prod", source: "pubsub" }).length;
      const base = app.healthUrl();
      if (prodEvents < EVENTS || base === undefined) return false;
      const r = await fetch(`${base}/readyz`);
      ready = `${String(r.status)} ${await r.text()}`;
      if (!ready.includes("Loki destination 'emea'")) return false;
      status = (await (await fetch(`${base}/statusz`)).json()) as typeof status;
      metrics = await (await fetch(`${base}/metrics`)).text();
      return true;
    },
  });
  assert.equal(
    ready,
    "503 degraded: daily egress budget exhausted for Loki destination 'emea' (orgs emea; resets at 00:00 UTC)",
  );
  assert.equal(loki.entries({ org: "emea" }).length, 0, "nothing of emea's shipped");
  assert.equal(status.egress.paused, false, "the top-level destination is not paused");
  const emea = (status.egress.destinations as Record<string, unknown>[])[0]!;
  assert.equal(emea.destination, "emea");
  assert.equal(emea.paused, true);
  assert.equal(emea.budget_used_bytes, emeaBytes, "the count continued from egress:budget:emea");
  assert.equal(emea.budget_key, "egress:budget:emea");
  assert.match(metrics, /^sf2loki_egress_paused 0$/m);
  assert.match(metrics, /^sf2loki_egress_paused\{destination="emea"\} 1$/m);
  assert.match(
    metrics,
    new RegExp(`^sf2loki_egress_budget_used_bytes\\{destination="emea"\\} ${String(emeaBytes)}$`, "m"),
  );
  const doc2 = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
  assert.ok(doc2[`org=prod:pubsub:${TOPIC}`] !== undefined, "prod's Pub/Sub checkpoint moved");
  assert.equal(doc2[`org=emea:pubsub:${TOPIC}`], undefined, "emea's is held with its events");
  assert.equal(doc2["egress:budget:emea"], doc1["egress:budget:emea"]);
  assert.ok(
    (JSON.parse(doc2["egress:budget"]!) as { bytes: number }).bytes > mainBytes,
    "the top-level count went on from the stored one",
  );
});

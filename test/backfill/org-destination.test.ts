// `sf2loki backfill --org X` sends X's rows where the daemon would: to X's own Loki destination (#123),
// under X's tenant, with X's destination's budget key in the backfill document.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { utcDate } from "../../src/egress/budget.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const ROWS = 40;

test("backfill --org emea pushes to emea's own Loki under its tenant, and counts its budget under its key", async (t) => {
  const world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: { Report: ROWS }, days: 1 } },
  });
  t.after(() => world.stop());
  const other = await startLokiReceiver();
  t.after(() => other.stop());
  const dir = tempDir("sf2loki-backfill-dest-");
  const c = world.config(join(dir, "state.json"));
  const sf = c.salesforce;
  delete c.salesforce;
  delete c.sources;
  c.orgs = [
    { name: "prod", salesforce: sf },
    {
      name: "emea",
      salesforce: sf,
      sink: { loki: { url: other.pushUrl, tenant_id: "emea-t", egress: { daily_byte_budget: 10_000_000 } } },
    },
  ];
  const since = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  const config = writeFile(dir, "c.yaml", stringify(c));
  const r = await cli(["backfill", "--org", "emea", "--since", since, "--config", config]);
  assert.equal(r.code, 0, r.stderr);
  const m = /rows_pushed=(\d+) rows_dropped=0 bytes_pushed=(\d+)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  assert.equal(Number(m[1]), ROWS);
  assert.equal(world.loki.entries().length, 0, "nothing went to the top-level Loki");
  const rows = other.entries({ source: "eventlogfile", org: "emea" });
  assert.equal(rows.length, ROWS);
  assert.ok(rows.every((e) => e.tenant === "emea-t"));
  const doc = JSON.parse(readFileSync(join(dir, "state-backfill.json"), "utf8")) as Record<string, string>;
  assert.equal(doc["egress:budget:emea"], `{"date": "${utcDate(Date.now())}", "bytes": ${m[2]!}}`);
  assert.equal(doc["egress:budget"], undefined, "the top-level destination has no budget here");
});

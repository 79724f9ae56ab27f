// `sf2loki backfill` pushes through the same governor as the daemon (wiring.ts wraps the one sink both
// use): with a daily budget in drop mode, the rows over budget are counted as dropped in the summary,
// the delivered bytes stay within the budget, and the count lands in the backfill's own document.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { stringify } from "yaml";
import { utcDate } from "../../src/egress/budget.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const ROWS = 400;
const BUDGET = 30_000;

test("backfill under a daily budget in drop mode delivers within the budget and counts every dropped row", async (t) => {
  const world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: { Report: ROWS }, days: 1 } },
  });
  t.after(() => world.stop());
  const dir = tempDir("sf2loki-egress-backfill-");
  const c = world.config(join(dir, "state.json"));
  (c.sink as { loki: Record<string, unknown> }).loki.batch = { flush_interval: "50ms", max_entries: 20 };
  (c.sink as { loki: Record<string, unknown> }).loki.egress = {
    daily_byte_budget: BUDGET,
    budget_action: "drop",
  };
  const since = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  const r = await cli(["backfill", "--since", since, "--config", writeFile(dir, "c.yaml", stringify(c))]);
  assert.equal(r.code, 0, r.stderr);
  const m = /rows_pushed=(\d+) rows_dropped=(\d+) bytes_pushed=(\d+)/.exec(r.stdout);
  assert.ok(m, r.stdout);
  const [pushed, dropped, bytes] = [Number(m[1]), Number(m[2]), Number(m[3])];
  assert.equal(pushed + dropped, ROWS);
  assert.ok(dropped > 0 && pushed > 0, `${String(pushed)} pushed, ${String(dropped)} dropped`);
  assert.ok(bytes <= BUDGET, `${String(bytes)} bytes delivered`);
  assert.equal(world.loki.entries({ source: "eventlogfile" }).length, pushed);
  const doc = JSON.parse(readFileSync(join(dir, "state-backfill.json"), "utf8")) as Record<string, string>;
  assert.equal(doc["egress:budget"], `{"date": "${utcDate(Date.now())}", "bytes": ${String(bytes)}}`);
  assert.throws(() => readFileSync(join(dir, "state.json")), /ENOENT/, "the daemon's document is untouched");
});

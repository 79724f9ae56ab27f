// `sf2loki backfill` keeps what Loki refuses for good in the same dead-letter store as the daemon
// (it takes no lease, so no fence applies), and `deadletter replay` sends it once Loki accepts it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import type { DeadLetterRecord } from "../../src/deadletter/types.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

test("backfill dead-letters the rows Loki refuses; replay delivers them once it accepts", async (t) => {
  const world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: { URI: 30, Report: 20 }, days: 1 } },
  });
  t.after(() => world.stop());
  const dir = tempDir();
  const c = world.config(join(dir, "state.json"));
  (c.sink as { loki: Record<string, unknown> }).loki.batch = { flush_interval: "50ms", max_entries: 200 };
  // A coordinator that backfill never runs: the keeper it uses must not ask it for leadership.
  c.coordinate = {
    type: "file_lease",
    file_lease: { path: join(dir, "lease.json") },
  };
  const config = writeFile(dir, "c.yaml", stringify(c));
  world.loki.reset();
  world.loki.faults.rejectLinesContaining('"EVENT_TYPE": "URI"');
  const since = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);
  const r = await cli(["backfill", "--since", since, "--config", config]);
  assert.equal(r.code, 0, r.stderr);
  // At least the 30 URI rows; the sink may also give up on siblings of a refused request.
  const dropped = Number(/rows_dropped=(\d+) /.exec(r.stdout)?.[1]);
  assert.ok(dropped >= 30, r.stdout);

  const listed = await cli(["deadletter", "list", "--json", "--config", config]);
  const letters = listed.stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as DeadLetterRecord);
  assert.equal(letters.length, dropped, "every dropped row is kept");
  assert.equal(letters.filter((l) => l.labels.event_type === "URI").length, 30);
  assert.ok(letters.every((l) => l.labels.backfill === "true"));
  assert.ok(
    letters.every((l) => l.checkpoint_key.startsWith("backfill:")),
    letters[0]?.checkpoint_key,
  );

  world.loki.faults.rejectLinesContaining(null);
  const replayed = await cli(["deadletter", "replay", "--config", config]);
  assert.equal(replayed.code, 0, replayed.stderr);
  // Siblings the sink gave up on may have been stored by Loki all along: the replay finds those in
  // Loki and removes them without sending them twice (#27); the rest are delivered now.
  const delivered = Number(/(\d+) delivered and removed/.exec(replayed.stdout)?.[1]);
  const already = Number(/(\d+) already in Loki/.exec(replayed.stdout)?.[1] ?? 0);
  assert.equal(delivered + already, dropped, replayed.stdout);
  assert.ok(delivered >= 30, replayed.stdout);
  assert.equal(world.loki.counts.duplicates, 0, "no row stored twice");
  const uri = world.pollingStats()["eventlogfile:URI"];
  assert.equal(uri?.missing, 0);
});

// kill -9 of a `sf2loki backfill` process mid-run, then the same command again: nothing missing, and
// the replay bounded by the file that was in flight (plus the pushes not yet committed at the kill).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { join } from "node:path";
import { stringify } from "yaml";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
const ROWS_PER_FILE = 12_000;
const TYPES = { Report: ROWS_PER_FILE, URI: ROWS_PER_FILE };
const DAYS = 3;
const MAX_ENTRIES = 500;
/** The default sink.loki.batch.max_uncommitted: batches pushed and not yet committed. */
const MAX_UNCOMMITTED = 16;

const delivered = (w: DemoWorld): number =>
  Object.values(w.pollingStats()).reduce((n, s) => n + s.delivered, 0);

test("kill -9 mid-backfill, then a rerun: 0 missing, duplicates at most the in-flight file", async (t) => {
  const world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: TYPES, days: DAYS } },
  });
  t.after(() => world.stop());
  // Slow pushes a little so the kill lands mid-file, not after the end.
  world.loki.faults.setLatency(15);
  const dir = tempDir();
  const c = world.config(join(dir, "state.json"));
  (c.sink as { loki: Record<string, unknown> }).loki.batch = {
    flush_interval: "50ms",
    max_entries: MAX_ENTRIES,
  };
  const config = writeFile(dir, "c.yaml", stringify(c));
  const total = Object.values(world.pollingStats()).reduce((n, s) => n + s.emitted, 0);
  const since = new Date(Date.now() - 4 * 86_400_000).toISOString().slice(0, 10);
  const args = [BIN, "backfill", "--since", since, "--config", config];

  const first = spawn(process.execPath, args, { stdio: ["ignore", "ignore", "pipe"] });
  t.after(() => first.kill("SIGKILL"));
  await waitFor(() => delivered(world) >= 20_000, 30_000, "the first backfill to ship 20 000 rows");
  first.kill("SIGKILL");
  await once(first, "exit");
  // Let the receiver finish any request that was fully sent before the kill.
  await new Promise((resolve) => setTimeout(resolve, 300));
  assert.ok(delivered(world) < total, "killed mid-run");
  const acceptedAtKill = world.loki.counts.accepted;

  world.loki.faults.setLatency(0);
  const second = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "pipe"] });
  t.after(() => second.kill("SIGKILL"));
  let stdout = "";
  let stderr = "";
  second.stdout.on("data", (b: Buffer) => (stdout += b.toString()));
  second.stderr.on("data", (b: Buffer) => (stderr += b.toString()));
  const [code] = (await once(second, "exit")) as [number | null];
  assert.equal(code, 0, stderr.slice(-2000));
  let duplicates = 0;
  for (const [key, s] of Object.entries(world.pollingStats())) {
    assert.equal(s.missing, 0, key);
    duplicates += s.duplicates;
  }
  t.diagnostic(`killed at ${acceptedAtKill} rows; ${duplicates} duplicates after the rerun`);
  // The rerun resumes at the last committed cursor: the file in flight is replayed, plus at most the
  // batches pushed without their commit (max_uncommitted).
  assert.ok(
    duplicates <= ROWS_PER_FILE + MAX_UNCOMMITTED * MAX_ENTRIES,
    `${duplicates} duplicates > one file of ${ROWS_PER_FILE} rows`,
  );
  // The rerun's summary is exactly what it pushed.
  const rows = Number(/rows_pushed=(\d+)/.exec(stdout)?.[1]);
  assert.equal(rows, world.loki.counts.accepted - acceptedAtKill, stdout);
});

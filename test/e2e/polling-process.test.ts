// kill -9 of a daemon process in the middle of an EventLogFile drain, then a restart: at-least-once
// for the polling sources across a crash, with duplicates bounded by the interrupted file.
import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { join } from "node:path";
import { stringify } from "yaml";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { spawnDaemon, waitFor } from "../support/daemon.ts";

const delivered = (w: DemoWorld): number =>
  Object.values(w.pollingStats()).reduce((n, s) => n + s.delivered, 0);

test("kill -9 mid-EventLogFile, then a restart: every row, object record and ApexLog arrives", async (t) => {
  const ROWS = 40_000;
  const world = await startDemoWorld({
    seed: 9,
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: {
      eventLogFiles: { Report: { rows: ROWS, files: 2 } },
      objects: { ApiAnomalyEventStore: { records: 800, tie: 500 } },
      apexLogs: 40,
    },
  });
  t.after(() => world.stop());
  const dir = tempDir();
  const config = writeFile(dir, "c.yaml", stringify(world.config(join(dir, "state.json"))));
  const total = Object.values(world.pollingStats()).reduce((n, s) => n + s.emitted, 0);

  const first = spawnDaemon(config);
  t.after(() => first.kill("SIGKILL"));
  await waitFor(() => delivered(world) >= 8_000, 30_000, "the first daemon to ship 8 000 records");
  first.kill("SIGKILL");
  await once(first, "exit");
  assert.ok(delivered(world) < total, "killed mid-drain");

  const second = spawnDaemon(config);
  t.after(() => second.kill("SIGKILL"));
  let stderr = "";
  second.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  await waitFor(() => delivered(world) === total, 60_000, "every polled record");
  second.kill("SIGTERM");
  const [code] = (await once(second, "exit")) as [number | null];
  assert.equal(code, 0, stderr.slice(-2000));
  for (const [key, s] of Object.entries(world.pollingStats())) {
    assert.equal(s.missing, 0, key);
    // A kill can replay at most the file being drained (one of two files of ROWS/2 rows) and the
    // uncommitted tail of the other sources.
    assert.ok(s.duplicates <= ROWS / 2 + 1_000, `${key}: ${s.duplicates} duplicates`);
  }
});

// A swap from the Python sf2loki (#10): its state directory still holds the empty `state.json.lock` it
// used with flock. The daemon takes it over with exactly one WARN naming the file, and delivers every
// event of the simulated org.
import assert from "node:assert/strict";
import { utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { captureLogger } from "../state/helpers/capture-logger.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir } from "../support/tmp.ts";

const TOPIC = "/event/LoginEventStream";

test("the Python version's leftover empty state.json.lock: one WARN naming it, then every event delivered", async (t) => {
  const world = await startDemoWorld({ seed: 41, eventsPerTopic: 1500, topics: [TOPIC] });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const lockPath = `${statePath}.lock`;
  writeFileSync(lockPath, "");
  const stoppedAnHourAgo = new Date(Date.now() - 3_600_000);
  utimesSync(lockPath, stoppedAnHourAgo, stoppedAnHourAgo);

  const log = captureLogger();
  const app = createApp(validateConfig(world.config(statePath)), {
    logger: log.logger,
    noHealthServer: true,
  });
  const stop = new AbortController();
  const run = app.run(stop.signal);
  t.after(async () => {
    stop.abort();
    await run;
  });
  await waitFor(() => world.stats()[TOPIC]!.delivered >= 1500, 30_000, "every event");
  assert.equal(world.stats()[TOPIC]!.missing, 0);
  const aboutTheLock = log.warnings().filter((l) => JSON.stringify(l).includes(lockPath));
  assert.equal(aboutTheLock.length, 1, JSON.stringify(aboutTheLock));
  assert.match(aboutTheLock[0]!.msg, /names no holder/);
  stop.abort();
  await run;
});

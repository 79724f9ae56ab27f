// The connected app's token limit (#38): Salesforce keeps a bounded number of access tokens per user per
// connected app and revokes the oldest when one more is minted, so a process that minted a token per
// source would revoke its own. One daemon with every source kind (Pub/Sub, a polled event object,
// EventLogFiles, ApexLogs) against the simulated org, counted at the org's OAuth endpoint: one token for
// the whole process, shared by every source.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { createApp } from "../../src/daemon/app.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { runAppUntil } from "../support/run-app.ts";
import { tempDir } from "../support/tmp.ts";

test("one daemon with all four source kinds mints one token per org, shared by every source", async (t) => {
  const world = await startDemoWorld({
    eventsPerTopic: 50,
    polling: {
      objects: { ApiAnomalyEventStore: { records: 5 } },
      dailyEventLogFiles: { types: { Report: 10 }, days: 1 },
      apexLogs: 3,
    },
  });
  t.after(() => world.stop());
  const app = createApp(validateConfig(world.config(join(tempDir(), "state.json"))));
  const polled = (): boolean => {
    const stats = Object.values(world.pollingStats());
    return stats.length > 0 && stats.every((s) => s.emitted > 0 && s.delivered >= s.emitted);
  };
  const streamed = (): boolean =>
    Object.values(world.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted);
  await runAppUntil(app, () => polled() && streamed());
  assert.ok(streamed(), `Pub/Sub did not deliver: ${JSON.stringify(world.stats())}`);
  assert.ok(polled(), `the polling sources did not deliver: ${JSON.stringify(world.pollingStats())}`);
  const kinds = Object.keys(world.pollingStats()).map((key) => key.split(":")[0]);
  for (const kind of ["eventlogfile", "apexlog"])
    assert.ok(kinds.includes(kind), `${kind}: ${kinds.join(" ")}`);
  assert.equal(world.org.stats().mints, 1, "every source shares the process's one token");
});

// The daemon as a real process (kill -9 mid-stream), and backpressure from a stalled Loki all the way
// to Salesforce flow control.
import { test } from "node:test";
import assert from "node:assert/strict";
import { once } from "node:events";
import { join } from "node:path";
import { stringify } from "yaml";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { deepMerge } from "../../src/config/env.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { spawnDaemon, waitFor } from "../support/daemon.ts";

const delivered = (w: DemoWorld): number => Object.values(w.stats()).reduce((n, s) => n + s.delivered, 0);

test("kill -9 of the daemon mid-stream, then a restart: nothing lost, duplicates bounded", async (t) => {
  const world = await startDemoWorld({ seed: 11, eventsPerTopic: 30_000 });
  t.after(() => world.stop());
  const dir = tempDir();
  const config = writeFile(dir, "c.yaml", stringify(world.config(join(dir, "state.json"))));

  const first = spawnDaemon(config);
  t.after(() => first.kill("SIGKILL"));
  await waitFor(() => delivered(world) >= 20_000, 30_000, "the first daemon to deliver 20 000 events");
  first.kill("SIGKILL");
  await once(first, "exit");
  assert.ok(delivered(world) < 90_000, "killed mid-stream");

  const second = spawnDaemon(config);
  t.after(() => second.kill("SIGKILL"));
  let stderr = "";
  second.stderr?.on("data", (c: Buffer) => (stderr += c.toString()));
  await waitFor(
    () => Object.values(world.stats()).every((s) => s.delivered === s.emitted),
    30_000,
    "every event",
  );
  second.kill("SIGTERM");
  const [code] = (await once(second, "exit")) as [number | null];
  assert.equal(code, 0, stderr);
  for (const [topic, s] of Object.entries(world.stats())) {
    assert.equal(s.missing, 0, topic);
    // What a kill can leave uncommitted: the streaming lane's batches pushed and not committed (max_uncommitted, 16 x 1000).
    assert.ok(s.duplicates <= 16_000, `${topic}: ${s.duplicates} duplicates`);
  }
});

test("a stalled Loki stops Salesforce: no outstanding credit, buffered bytes within the lane budget", async (t) => {
  const topics = ["/event/LoginEventStream"];
  const world = await startDemoWorld({ seed: 5, eventsPerTopic: 50_000, topics });
  const stop = new AbortController();
  const running: Promise<void>[] = [];
  // A failed assertion still stops the daemon before the world it talks to.
  t.after(async () => {
    world.loki.faults.release();
    stop.abort();
    await Promise.all(running);
    await world.stop();
  });
  const budget = 1_048_576;
  const tree = deepMerge(world.config(join(tempDir(), "state.json")), {
    sources: { pubsub: { bridge_max_bytes: 262_144 } },
    sink: {
      loki: { batch: { queue_max_bytes: budget, queue_maxsize: 100, max_entries: 100, max_in_flight: 1 } },
    },
  });
  const app = createApp(validateConfig(tree));
  world.loki.faults.stall();
  running.push(app.run(stop.signal));

  // Wait until credit stops moving: the client asked for nothing more while the pipeline was full.
  let requested = -1;
  await waitFor(
    () => {
      const now = world.org.stats().streams.reduce((n, s) => n + s.requested, 0);
      const settled = now === requested && now > 0;
      requested = now;
      return settled;
    },
    20_000,
    "flow control to settle",
  );
  const streams = world.org.stats().streams.filter((s) => s.active);
  assert.ok(streams.length > 0);
  for (const s of streams) assert.equal(s.outstanding, 0, "no outstanding credit while Loki is stalled");
  const sent = streams.reduce((n, s) => n + s.sent, 0);
  assert.ok(sent < 50_000, `Salesforce held back the rest (sent ${sent})`);
  const lanes = (app.status().pipeline as { lanes: { streaming?: { queued_bytes: number } } }).lanes;
  const queued = lanes.streaming?.queued_bytes ?? 0;
  assert.ok(queued <= budget + 4096, `queued ${queued} B within the ${budget} B lane budget`);

  world.loki.faults.release();
  await waitFor(() => delivered(world) === 50_000, 30_000, "delivery after the stall");
  assert.equal(world.stats()["/event/LoginEventStream"]?.duplicates, 0);
});

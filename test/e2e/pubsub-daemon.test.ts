// The daemon end to end over real sockets: simulated org (OAuth + Pub/Sub gRPC) → sf2loki (app,
// pipeline, Loki sink, file store) → Loki receiver.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { tempDir } from "../support/tmp.ts";

const TOPICS = ["/event/LoginEventStream", "/event/ApiEventStream", "/event/LightningUriEventStream"];

/** Runs the app until `until()` holds (checked every 250 ms), then stops it and waits for the drain. */
async function runUntil(world: DemoWorld, statePath: string, until: () => boolean): Promise<void> {
  const app = createApp(validateConfig(world.config(statePath)));
  const stop = new AbortController();
  const poll = setInterval(() => {
    if (until()) stop.abort();
  }, 250);
  try {
    await app.run(stop.signal);
  } finally {
    clearInterval(poll);
  }
}

function replayIdOf(base64: string): number {
  return Number(Buffer.from(base64, "base64").readBigUInt64BE());
}

const allDelivered = (world: DemoWorld) => (): boolean =>
  Object.values(world.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted);

test("3 topics x 20 000 events: every id exactly once, checkpoint = last replay id, restart resumes with no gap", async (t) => {
  const world = await startDemoWorld({ seed: 7, eventsPerTopic: 20_000, topics: TOPICS });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");

  await runUntil(world, statePath, allDelivered(world));
  for (const [topic, s] of Object.entries(world.stats())) {
    assert.deepEqual(s, { emitted: 20_000, delivered: 20_000, duplicates: 0, missing: 0 }, topic);
  }
  const state = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
  for (const topic of TOPICS) assert.equal(replayIdOf(state[`pubsub:${topic}`]!), 20_000, topic);

  // New events while sf2loki is down; a restart resumes from the stored replay id.
  for (const topic of TOPICS) world.org.faults.publish(topic, 500);
  await runUntil(world, statePath, allDelivered(world));
  for (const [topic, s] of Object.entries(world.stats())) {
    assert.deepEqual(s, { emitted: 20_500, delivered: 20_500, duplicates: 0, missing: 0 }, topic);
  }
});

test("stopped mid-stream and restarted: nothing lost, duplicates bounded by in-flight batches", async (t) => {
  const world = await startDemoWorld({ seed: 3, eventsPerTopic: 10_000, topics: TOPICS });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const delivered = (): number => Object.values(world.stats()).reduce((n, s) => n + s.delivered, 0);

  await runUntil(world, statePath, () => delivered() >= 6_000);
  assert.ok(delivered() < 30_000, "the first run stopped mid-stream");
  await runUntil(world, statePath, allDelivered(world));
  for (const [topic, s] of Object.entries(world.stats())) {
    assert.equal(s.missing, 0, topic);
    assert.equal(s.delivered, 10_000, topic);
    // max_uncommitted (16) x max_entries (1000) per lane is the most a stop can leave uncommitted.
    assert.ok(s.duplicates <= 16_000, `${topic}: ${s.duplicates} duplicates`);
  }
});

test("sf2loki demo --json reports every event delivered exactly once", async () => {
  const r = await cli(["demo", "--events", "300", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as {
    emitted: number;
    delivered: number;
    duplicates: number;
    missing: number;
  };
  assert.deepEqual(
    [summary.emitted, summary.delivered, summary.duplicates, summary.missing],
    [900, 900, 0, 0],
  );
});

// A checkpoint store outage of any length never ends the process (#10): with the S3 store answering
// 503 to everything, from the start and again mid-stream, the daemon stays up, /readyz turns 503 naming
// the store within 30 s, turns 200 again when the store heals, and everything it held is delivered.
import assert from "node:assert/strict";
import { test } from "node:test";
import { deepMerge } from "../../src/config/env.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { pollHealth, runApp } from "../support/app.ts";
import { waitFor } from "../support/daemon.ts";
import { faults } from "../support/object-store-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir } from "../support/tmp.ts";
import { join } from "node:path";

const TOPIC = "/event/LoginEventStream";
const BUCKET = "state";
const KEY = "sf2loki/state.json";

test("an S3 store answering 503 to everything, from the start and mid-stream: up, 503 naming the store, then 200 and nothing lost", async (t) => {
  process.env.AWS_ACCESS_KEY_ID = "test";
  process.env.AWS_SECRET_ACCESS_KEY = "test";
  process.env.AWS_EC2_METADATA_DISABLED = "true";
  const world = await startDemoWorld({ seed: 31, eventsPerTopic: 1000, topics: [TOPIC] });
  t.after(() => world.stop());
  const s3 = new S3Emulator({ buckets: [BUCKET] });
  const url = await s3.start();
  t.after(() => s3.close());
  const everything = (): boolean => true;
  s3.inject(everything, faults.slowDown(), Number.MAX_SAFE_INTEGER);

  const tree = deepMerge(world.config(join(tempDir(), "unused.json")), {
    state: { store: "s3", s3: { bucket: BUCKET, key: KEY, endpoint_url: url, region: "us-east-1" } },
  });
  const { app, stop, run, outcome } = runApp(t, tree);
  let ready = "";
  pollHealth(t, app, "/readyz", 100, (a) => (ready = a));
  const expectStoreNamed = new RegExp(`^503 not ready: checkpoint store: s3://${BUCKET}/${KEY}: `);

  // From the start: nothing can load its checkpoint, nothing flows.
  const started = Date.now();
  await waitFor(() => expectStoreNamed.test(ready), 30_000, "/readyz to name the failing store");
  const fromStart = Date.now() - started;
  assert.equal(outcome(), "running", "the process stays up");
  assert.equal(world.stats()[TOPIC]!.delivered, 0);
  const status = app.status()["checkpoint_store"] as { ok: boolean; error: string };
  assert.equal(status.ok, false);

  s3.clearFaults();
  await waitFor(() => ready === "200 ready", 60_000, "readiness to heal");
  await waitFor(() => world.stats()[TOPIC]!.delivered >= 1000, 60_000, "the backlog");

  // Mid-stream: commits fail while events keep arriving; they are held, then delivered.
  s3.inject(everything, faults.slowDown(), Number.MAX_SAFE_INTEGER);
  const broke = Date.now();
  world.org.faults.publish(TOPIC, 3000);
  await waitFor(() => expectStoreNamed.test(ready), 30_000, "/readyz to name the failing store mid-stream");
  const midStream = Date.now() - broke;
  assert.equal(outcome(), "running", "a failing commit does not crash the pipeline");
  s3.clearFaults();
  await waitFor(() => ready === "200 ready", 60_000, "readiness to heal again");
  await waitFor(() => world.stats()[TOPIC]!.delivered >= 4000, 60_000, "everything held");
  assert.equal(world.stats()[TOPIC]!.missing, 0);
  const stored = JSON.parse(s3.getObject(BUCKET, KEY)!.bytes.toString("utf8")) as Record<string, string>;
  assert.ok(stored[`pubsub:${TOPIC}`], "the checkpoint moved on once the store answered");
  t.diagnostic(`/readyz named the store ${fromStart} ms after start and ${midStream} ms after it broke`);
  stop.abort();
  await run;
  assert.equal(outcome(), "exited");
});

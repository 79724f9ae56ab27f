// Backfill with S3 state: its checkpoints go to the configured bucket, in their own object beside the
// daemon's (`sf2loki/state-backfill.json`), by compare-and-swap; the daemon's object is never written.
// A rerun resumes from the bucket (nothing more pushed).
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { stringify } from "yaml";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const dir = tempDir("sf2loki-backfill-s3-");
let world: DemoWorld;
const s3 = new S3Emulator();
const saved = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };

before(async () => {
  world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: { Report: 50, URI: 40 }, days: 2 } },
  });
  await s3.start();
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
});
after(async () => {
  process.env.AWS_ACCESS_KEY_ID = saved.id;
  process.env.AWS_SECRET_ACCESS_KEY = saved.secret;
  await Promise.all([world.stop(), s3.close()]);
});

it("backfill on S3 state: its own object in the bucket, resumable, the daemon's object untouched", async () => {
  const c = world.config(join(dir, "unused.json"));
  c.state = { store: "s3", s3: { bucket: "state-bucket", region: "us-east-1", endpoint_url: s3.url } };
  const path = writeFile(dir, "s3.yaml", stringify(c));
  const since = new Date(Date.now() - 3 * 86_400_000).toISOString().slice(0, 10);

  const r = await cli(["backfill", "--since", since, "--config", path]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /files=4 rows_pushed=180 /);
  assert.equal(world.loki.counts.accepted, 180);
  assert.equal(s3.getObject("state-bucket", "sf2loki/state.json"), undefined);
  const stored = s3.getObject("state-bucket", "sf2loki/state-backfill.json");
  assert.ok(stored);
  const doc = JSON.parse(stored.bytes.toString("utf8")) as Record<string, string>;
  assert.deepEqual(Object.keys(doc).sort(), ["backfill:Daily:Report", "backfill:Daily:URI"]);
  // Every write was conditional (If-None-Match on create, If-Match after).
  assert.ok(s3.writes.every((w) => w.key === "sf2loki/state-backfill.json"));

  const again = await cli(["backfill", "--since", since, "--config", path]);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /files=0 rows_pushed=0 /);
  assert.equal(world.loki.counts.accepted, 180);
});

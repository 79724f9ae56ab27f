// The dead-letter chain on S3, through the wiring and the CLI: the S3 emulator holds one object per
// refused group next to the checkpoint object; list filters, purge of a selection, replay once the
// simulated Loki accepts, and then no object is left under the prefix.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config/load.ts";
import type { DeadLetterRecord } from "../../src/deadletter/types.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { startLokiReceiver, type LokiReceiver } from "../../src/sim/loki.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { cli } from "../support/cli.ts";
import { entry, MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const PREFIX = "sf2loki/state-deadletter/";

async function world(t: TestContext): Promise<{ s3: S3Emulator; loki: LokiReceiver; config: string }> {
  const s3 = new S3Emulator();
  await s3.start();
  t.after(() => s3.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const config = writeFile(
    tempDir(),
    "s3.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\n" +
      `sink: {loki: {url: '${loki.pushUrl}'}}\n` +
      `state: {store: s3, s3: {bucket: state-bucket, region: us-east-1, endpoint_url: "${s3.url}"}}\n`,
  );
  const saved = { ...process.env };
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
  t.after(() => {
    process.env = saved;
  });
  return { s3, loki, config };
}

function objects(s3: S3Emulator): string[] {
  return [...new Set(s3.writes.map((w) => w.key))].filter(
    (k) => k.startsWith(PREFIX) && s3.getObject("state-bucket", k),
  );
}

async function listed(config: string, ...flags: string[]): Promise<DeadLetterRecord[]> {
  const r = await cli(["deadletter", "list", "--json", "--config", config, ...flags]);
  assert.equal(r.code, 0, r.stderr);
  return r.stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as DeadLetterRecord);
}

test("S3: refused entries land next to the checkpoint object, filters and purge select, replay empties the store", async (t) => {
  const { s3, loki, config } = await world(t);
  loki.faults.rejectLinesContaining("POISON");
  // Two days ago, entries from just before: inside Loki's 7-day window, which the sink checks.
  const clock = new ManualClock({ startMs: Date.now() - 2 * 86_400_000 });
  const ts = BigInt(clock.now() - 60_000) * 1_000_000n;
  const graph = buildGraph(await loadConfig(config, process.env), { clock });
  const labels = (org: string) => ({ source: "eventlogfile", event_type: "API", org });
  const items = [
    entry("org=prod:eventlogfile:API", "1", { line: "POISON prod", labels: labels("prod"), timestampNs: ts }),
    entry("org=prod:eventlogfile:API", "2", { line: "fine", labels: labels("prod"), timestampNs: ts + 1n }),
    entry("org=dev:eventlogfile:API", "1", {
      line: "POISON dev",
      labels: labels("dev"),
      timestampNs: ts + 2n,
    }),
  ];
  const checkpoints = new MemoryStore();
  await new Pipeline({
    sources: [new ScriptedSource("eventlogfile", items)],
    sink: graph.sink,
    store: checkpoints,
    batch: { ...DEFAULT_BATCH_SETTINGS, flush_interval_ms: 250 },
    clock,
    deadLetters: graph.deadLetters,
  }).run(new AbortController().signal);
  await graph.sink.close();
  await graph.deadLetters?.store.close();

  assert.equal(checkpoints.doc.get("org=dev:eventlogfile:API"), "1");
  assert.deepEqual(loki.lines(), ["fine"]);
  // One object per refused group the sink reported (Loki's partial success names each entry).
  assert.ok(objects(s3).length >= 1 && objects(s3).length <= 2, objects(s3).join());

  // The two orgs' streams go in requests of their own, concurrently: either may be refused first.
  assert.deepEqual((await listed(config)).map((r) => [r.org, r.line, r.reason]).sort(), [
    ["dev", "POISON dev", "bad_request"],
    ["prod", "POISON prod", "bad_request"],
  ]);
  assert.deepEqual(
    (await listed(config, "--org", "dev")).map((r) => r.line),
    ["POISON dev"],
  );
  assert.deepEqual(await listed(config, "--reason", "oversized_413"), []);
  assert.equal((await listed(config, "--since", "1d")).length, 0, "kept two days ago (the manual clock)");
  assert.equal((await listed(config, "--since", "3d")).length, 2);
  const day = new Date(clock.now() - 86_400_000).toISOString().slice(0, 10);
  assert.equal((await listed(config, "--since", day)).length, 2);

  const purged = await cli(["deadletter", "purge", "--org", "dev", "--config", config]);
  assert.equal(purged.code, 0, purged.stderr);
  assert.match(
    purged.stdout,
    /purged 1 dead letter\(s\) \(bad_request=1\) from s3:\/\/state-bucket\/sf2loki\/state-deadletter\//,
  );
  assert.deepEqual(
    (await listed(config)).map((r) => r.line),
    ["POISON prod"],
  );

  loki.faults.rejectLinesContaining(null);
  const replayed = await cli(["deadletter", "replay", "--config", config]);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.match(replayed.stdout, /1 delivered and removed, 0 refused again/);
  assert.deepEqual(loki.lines().sort(), ["POISON prod", "fine"]);
  assert.deepEqual(await listed(config), []);
  assert.deepEqual(objects(s3), [], "no object left under the prefix");
});

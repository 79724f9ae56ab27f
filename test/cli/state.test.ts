import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { faults } from "../support/object-store-emulator.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";

const BASE =
  "salesforce: {client_id: a, username: u, private_key: k}\nsink: {loki: {url: 'http://127.0.0.1:1/push'}}\n";

function fileConfig(dir: string, extra = ""): { config: string; state: string } {
  const state = join(dir, "state.json");
  return { state, config: writeFile(dir, "c.yaml", `${BASE}state: {file: {path: ${state}}}\n${extra}`) };
}

test("set, show, delete, export and import round-trip through the file store", async () => {
  const dir = tempDir();
  const { config, state } = fileConfig(dir);
  assert.equal(
    (await cli(["state", "set", "pubsub:/event/LoginEventStream", "AAAAAAAAAAE=", "--config", config])).code,
    0,
  );
  assert.equal(
    (
      await cli([
        "state",
        "set",
        "--config",
        config,
        "apexlog",
        '{"ids":[],"last_ts":"2026-01-01T00:00:00Z"}',
      ])
    ).code,
    0,
  );
  // A value starting with "-" goes after "--".
  assert.equal((await cli(["--config", config, "state", "set", "eventlogfile:Login", "--", "-1"])).code, 0);

  const show = await cli(["state", "show", "--config", config]);
  assert.equal(show.code, 0);
  assert.equal(
    show.stdout,
    'apexlog\t{"ids":[],"last_ts":"2026-01-01T00:00:00Z"}\neventlogfile:Login\t-1\npubsub:/event/LoginEventStream\tAAAAAAAAAAE=\n\n3 checkpoint(s)\n',
  );
  const glob = await cli(["state", "show", "--key", "pubsub:*", "--config", config]);
  assert.match(glob.stdout, /\n1 checkpoint\(s\) matching 'pubsub:\*'\n$/);
  assert.equal(
    (await cli(["state", "show", "--key", "nope*", "--config", config])).stdout,
    "(no checkpoints match)\n",
  );

  const exported = join(dir, "export.json");
  assert.equal((await cli(["state", "export", "--output", exported, "--config", config])).code, 0);
  const doc = JSON.parse(readFileSync(exported, "utf8")) as Record<string, string>;
  assert.deepEqual(Object.keys(doc), ["apexlog", "eventlogfile:Login", "pubsub:/event/LoginEventStream"]);

  const del = await cli(["state", "delete", "apexlog", "--config", config]);
  assert.match(del.stdout, /deleted apexlog \(its source restarts from preset\/lookback/);
  assert.equal(
    (await cli(["state", "delete", "apexlog", "--config", config])).code,
    0,
    "deleting a missing key is fine",
  );

  writeFile(dir, "extra.json", JSON.stringify({ "eventlog_objects:LoginEvent": "x" }));
  assert.equal((await cli(["state", "import", join(dir, "extra.json"), "--config", config])).code, 0);
  assert.deepEqual(Object.keys(JSON.parse(readFileSync(state, "utf8")) as object).sort(), [
    "eventlog_objects:LoginEvent",
    "eventlogfile:Login",
    "pubsub:/event/LoginEventStream",
  ]);
  assert.equal((await cli(["state", "import", exported, "--replace", "--config", config])).code, 0);
  assert.deepEqual(JSON.parse(readFileSync(state, "utf8")), doc);
});

test("reserved key, bare verb and HA refusals", async () => {
  const dir = tempDir();
  const { config } = fileConfig(dir);
  const reserved = await cli(["state", "set", "__fence_epoch__", "3", "--config", config]);
  assert.equal(reserved.code, 1);
  assert.match(reserved.stderr, /'__fence_epoch__' is a reserved internal key; refusing to set it/);
  assert.equal((await cli(["state", "--config", config])).code, 2);

  const ha = fileConfig(
    tempDir(),
    "coordinate: {type: file_lease, file_lease: {path: /tmp/x.lease}}\n",
  ).config;
  const refused = await cli(["state", "delete", "apexlog", "--config", ha]);
  assert.equal(refused.code, 1);
  assert.match(
    refused.stderr,
    /refusing to delete checkpoints while coordinate\.type is 'file_lease': the lease does not exist .*--force/,
  );
  assert.equal((await cli(["state", "delete", "apexlog", "--force", "--config", ha])).code, 0);

  // A live lease: the refusal names its holder, epoch and expiry (#102).
  const leaseDir = tempDir();
  const lease = join(leaseDir, "leader.lease");
  writeFile(
    leaseDir,
    "leader.lease",
    JSON.stringify({
      holder: "pod-a",
      expires_at: "2026-11-29T10:00:30.000Z",
      epoch: 7,
      ttl_ms: 30000,
      renewed_at: "2026-11-29T10:00:00.000Z",
      acquired_at: "2026-11-29T09:00:00.000Z",
    }),
  );
  const held = fileConfig(leaseDir, `coordinate: {type: file_lease, file_lease: {path: ${lease}}}\n`).config;
  const named = await cli(["state", "set", "apexlog", "x", "--config", held]);
  assert.equal(named.code, 1);
  assert.match(
    named.stderr,
    /held by 'pod-a' \(epoch 7, last renewed 2026-11-29T10:00:00\.000Z, expires 2026-11-29T10:00:30\.000Z/,
  );
});

test("a lock held by another process: exit 1 naming the holder and what to do", async (t) => {
  const dir = tempDir();
  const { config, state } = fileConfig(dir);
  const holder = fileURLToPath(new URL("../state/fixtures/hold-file-lock.ts", import.meta.url));
  const child = spawn(process.execPath, [holder, state], { stdio: ["pipe", "pipe", "inherit"] });
  t.after(() => child.kill("SIGKILL"));
  await once(child.stdout, "data");
  const r = await cli(["state", "show", "--config", config]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`pid ${child.pid}`));
  assert.match(r.stderr, /stop the running daemon first, or pass --force/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
  assert.equal((await cli(["state", "show", "--force", "--config", config])).code, 0);
});

/** An S3 emulator, stopped after `t`, and a config file whose state lives in it (test credentials set). */
async function s3State(t: TestContext): Promise<{ s3: S3Emulator; config: string }> {
  const s3 = new S3Emulator();
  await s3.start();
  t.after(() => s3.close());
  const config = writeFile(
    tempDir(),
    "s3.yaml",
    `${BASE}state: {store: s3, s3: {bucket: state-bucket, region: us-east-1, endpoint_url: "${s3.url}"}}\n`,
  );
  const saved = { ...process.env };
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
  t.after(() => {
    process.env = saved;
  });
  return { s3, config };
}

test("a missing S3 bucket or GCS bucket: exit 1, one line naming it with the command creating it (#29)", async (t) => {
  const { s3 } = await s3State(t);
  const s3Config = writeFile(
    tempDir(),
    "s3-missing.yaml",
    `${BASE}state: {store: s3, s3: {bucket: no-such-bucket, region: us-east-1, endpoint_url: "${s3.url}"}}\n`,
  );
  const gcs = new GcsEmulator();
  await gcs.start();
  t.after(() => gcs.close());
  const gcsConfig = writeFile(
    tempDir(),
    "gcs-missing.yaml",
    `${BASE}state: {store: gcs, gcs: {bucket: no-such-bucket, endpoint_url: "${gcs.url}"}}\n`,
  );
  for (const [config, create] of [
    [s3Config, /`aws s3 mb s3:\/\/no-such-bucket --endpoint-url http:\/\/127\.0\.0\.1:\d+`/],
    [gcsConfig, /`gcloud storage buckets create gs:\/\/no-such-bucket`/],
  ] as const) {
    for (const args of [
      ["state", "show"],
      ["state", "set", "apexlog", "x"],
    ]) {
      const r = await cli([...args, "--config", config]);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(
        r.stderr,
        /^sf2loki: \w+ on (s3|gs):\/\/no-such-bucket\/sf2loki\/state\.json failed: the bucket no-such-bucket does not exist/,
      );
      assert.match(r.stderr, create);
      assert.doesNotMatch(r.stderr, /unexpected error|\n\s+at /);
    }
  }
});

test("a state file cut mid-value: exit 1 naming it corrupt with the move-aside hint, not an outage", async () => {
  const dir = tempDir();
  const { config, state } = fileConfig(dir);
  writeFile(dir, "state.json", '{"pubsub:/event/X": "AAA');
  const r = await cli(["state", "show", "--config", config]);
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`^sf2loki: state file ${state.replaceAll(".", "\\.")} is corrupt`));
  assert.match(r.stderr, /mv .*state\.json .*state\.json\.corrupt/);
  assert.doesNotMatch(r.stderr, /did not answer/);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
});

test("a corrupt S3 object: exit 1 naming the object and the recovery, no stack", async (t) => {
  const { s3, config } = await s3State(t);
  s3.putObject("state-bucket", "sf2loki/state.json", '{"pubsub:/event/X": "AAA');
  const r = await cli(["state", "show", "--config", config]);
  assert.equal(r.code, 1);
  // Named corrupt, never an outage: V8's "Unterminated string" once read as a dead socket (#29).
  assert.match(r.stderr, /^sf2loki: state object s3:\/\/state-bucket\/sf2loki\/state\.json is corrupt/);
  assert.doesNotMatch(r.stderr, /did not answer/);
  assert.match(r.stderr, /restore an earlier version|remove it/);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test("a store answering 503 to everything: exit 1 and one line naming the store, no stack (#10)", async (t) => {
  const { s3, config } = await s3State(t);
  s3.inject(() => true, faults.slowDown(), Number.MAX_SAFE_INTEGER);
  const r = await cli(["state", "show", "--config", config]);
  assert.equal(r.code, 1);
  assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
  assert.match(
    r.stderr,
    /^sf2loki: the state store s3:\/\/state-bucket\/sf2loki\/state\.json did not answer \(/,
  );
  assert.doesNotMatch(r.stderr, /\n\s+at /);
});

test("import --replace is one write that keeps the fence epoch", async (t) => {
  const s3 = new S3Emulator();
  await s3.start();
  t.after(() => s3.close());
  s3.putObject(
    "state-bucket",
    "sf2loki/state.json",
    JSON.stringify({ __fence_epoch__: "4", a: "1", b: "2" }),
  );
  const dir = tempDir();
  const config = writeFile(
    dir,
    "s3.yaml",
    `${BASE}state: {store: s3, s3: {bucket: state-bucket, region: us-east-1, endpoint_url: "${s3.url}"}}\n`,
  );
  const file = writeFile(dir, "in.json", JSON.stringify({ b: "3", c: "4" }));
  const saved = { ...process.env };
  Object.assign(process.env, { AWS_ACCESS_KEY_ID: "test", AWS_SECRET_ACCESS_KEY: "test" });
  t.after(() => {
    process.env = saved;
  });
  const before = s3.writes.length;
  const r = await cli(["state", "import", file, "--replace", "--config", config]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /imported 2 checkpoint\(s\) .*, removed 1/);
  assert.equal(s3.writes.length - before, 1, "exactly one PUT");
  const stored = s3.getObject("state-bucket", "sf2loki/state.json");
  assert.deepEqual(JSON.parse(String(stored?.bytes)), { __fence_epoch__: "4", b: "3", c: "4" });
});

test("a missing S3 bucket through deadletter: one line naming it and how to create it, no frames (#29)", async (t) => {
  const { s3 } = await s3State(t);
  const config = writeFile(
    tempDir(),
    "s3-missing-all.yaml",
    `${BASE}state: {store: s3, s3: {bucket: no-such-bucket, region: us-east-1, endpoint_url: "${s3.url}"}}\n`,
  );
  const listed = await cli(["deadletter", "list", "--config", config]);
  assert.equal(listed.code, 1, listed.stderr);
  assert.match(
    listed.stderr,
    /s3:\/\/no-such-bucket\/.* is in a bucket or container that does not exist .*create it \(aws s3 mb/,
  );
  assert.equal(listed.stderr.trim().split("\n").length, 1, listed.stderr);
  assert.doesNotMatch(listed.stderr, /unexpected error|\n\s+at /);
});

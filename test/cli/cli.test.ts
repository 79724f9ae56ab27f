import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const dir = tempDir();
const GOOD = writeFile(
  dir,
  "good.yaml",
  "salesforce: {client_id: a, username: u, private_key: k}\nsink: {loki: {url: 'http://127.0.0.1:1/loki/api/v1/push'}}\n",
);
const BAD_YAML = writeFile(dir, "bad.yaml", "sink:\n  loki:\n    url: 'unterminated\n  x: [\n");
const INVALID = writeFile(dir, "invalid.yaml", "sink: {loki: {url: x}}\nbogus: true\n");

test("--version prints sf2loki <the package.json version>", async () => {
  const r = await cli(["--version"]);
  assert.equal(r.code, 0);
  const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
    version: string;
  };
  assert.equal(r.stdout, `sf2loki ${pkg.version}\n`);
});

test("--check: OK exits 0, invalid config exits 2 with the problem on stderr", async () => {
  const ok = await cli(["--check", "--config", GOOD]);
  assert.deepEqual([ok.code, ok.stdout], [0, "config check OK\n"]);
  const bad = await cli(["--check", "--config", INVALID]);
  assert.equal(bad.code, 2);
  assert.match(
    bad.stderr,
    /^config check FAILED: invalid configuration:\n {2}bogus: unknown configuration key/,
  );
});

test("a YAML syntax error is exit 2 with the line number, no stack trace", async () => {
  for (const args of [
    ["--check", "--config", BAD_YAML],
    ["--config", BAD_YAML],
  ]) {
    const r = await cli(args);
    assert.equal(r.code, 2, args.join(" "));
    assert.match(r.stderr, /cannot parse config file .*bad\.yaml \(line \d+, column \d+\)/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  }
});

test("--config is accepted after a subcommand", async () => {
  const r = await cli(["config", "example", "--config", GOOD]);
  assert.equal(r.code, 0);
  assert.match(r.stdout, /^# sf2loki configuration/);
});

test("usage errors exit 2: unknown flag, unknown kind, --check with a subcommand", async () => {
  assert.equal((await cli(["--bogus"])).code, 2);
  const kind = await cli(["config", "nope"]);
  assert.equal(kind.code, 2);
  assert.match(kind.stderr, /unknown config kind 'nope'; choose one of: example, reference, schema/);
  assert.equal((await cli(["config", "schema", "--check"])).code, 2);
});

test("config schema and reference print to stdout", async () => {
  const schema = await cli(["config", "schema"]);
  assert.equal((JSON.parse(schema.stdout) as { title: string }).title, "Config");
  const ref = await cli(["config", "reference"]);
  assert.match(ref.stdout, /^# sf2loki configuration reference\n/);
});

test("the installed bin runs as a process and sets the exit code", () => {
  const bin = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
  const ok = spawnSync(process.execPath, [bin, "--check", "--config", GOOD], { encoding: "utf8" });
  assert.equal(ok.status, 0, ok.stderr);
  const bad = spawnSync(process.execPath, [bin, "--config", INVALID, "--check"], { encoding: "utf8" });
  assert.equal(bad.status, 2);
});

test("wiring guards are config errors: a static label outside the allowlist fails --check and run with exit 2", async () => {
  const bad = writeFile(
    dir,
    "labels.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\nsink: {loki: {url: 'http://127.0.0.1:1/push', labels: {team: x, source: y}}}\n",
  );
  const check = await cli(["--check", "--config", bad]);
  assert.equal(check.code, 2);
  assert.match(
    check.stderr,
    /^config check FAILED: sink\.loki\.labels: source \(reserved.*team \(not in the allowlist\)/,
  );
  const run = await cli(["--config", bad]);
  assert.equal(run.code, 2);
  assert.doesNotMatch(run.stderr, /\n\s+at /);
});

test("the public API exports what embedders need", async () => {
  const api = await import("../../src/index.ts");
  for (const name of [
    "loadConfig",
    "createApp",
    "buildStore",
    "ConfigError",
    "StateStoreConflictError",
    "StateFenceError",
  ]) {
    assert.ok(name in api, name);
  }
});

test("a reader that closes the pipe early is not a crash (sf2loki config example | head)", () => {
  const bin = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
  const r = spawnSync(
    "bash",
    ["-c", `"${process.execPath}" "${bin}" config reference | true; echo "\${PIPESTATUS[0]}"`],
    {
      encoding: "utf8",
    },
  );
  assert.equal(r.stdout.trim(), "0", r.stderr);
  assert.doesNotMatch(r.stderr, /EPIPE/);
});

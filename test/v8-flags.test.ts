import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { DAEMON_V8_FLAGS, missingV8Flags } from "../src/v8-flags.ts";

const BIN = new URL("../bin/sf2loki.js", import.meta.url).pathname;

test("the daemon's V8 flags are missing until given; an operator's own choice or SF2LOKI_V8_FLAGS=0 wins", () => {
  assert.deepEqual(missingV8Flags([], {}), DAEMON_V8_FLAGS);
  assert.deepEqual(missingV8Flags([...DAEMON_V8_FLAGS], {}), []);
  assert.deepEqual(missingV8Flags(["--max-semi-space-size=64"], {}), []);
  assert.deepEqual(missingV8Flags([], { NODE_OPTIONS: "--enable-source-maps --max-semi-space-size=4" }), []);
  assert.deepEqual(missingV8Flags(["--heap-growing-percent", "10"], {}), []);
  assert.deepEqual(missingV8Flags([], { SF2LOKI_V8_FLAGS: "0" }), []);
});

test("bin/sf2loki.js replaces itself with a process that has the flags, keeping its arguments", async (t) => {
  // `sim` keeps running once it printed its JSON line; by then the re-exec has happened, so the kernel's
  // view of the same pid shows the command line the process runs with now.
  const child = spawn(process.execPath, [BIN, "sim", "--events", "1"], {
    stdio: ["ignore", "pipe", "ignore"],
  });
  t.after(() => child.kill("SIGKILL"));
  await once(child.stdout, "data");
  const argv = readFileSync(`/proc/${child.pid}/cmdline`, "utf8").split("\0").filter(Boolean);
  for (const flag of DAEMON_V8_FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(" ")}`);
  assert.deepEqual(argv.slice(-3), ["sim", "--events", "1"]);
});

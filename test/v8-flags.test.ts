import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { test } from "node:test";
import { DAEMON_ENV, DAEMON_V8_FLAGS, missingDaemonEnv, missingV8Flags } from "../src/v8-flags.ts";

const BIN = new URL("../bin/sf2loki.js", import.meta.url).pathname;

test("the daemon's V8 flags are missing until given; an operator's own choice or SF2LOKI_V8_FLAGS=0 wins", () => {
  assert.deepEqual(missingV8Flags([], {}), DAEMON_V8_FLAGS);
  assert.deepEqual(missingV8Flags([...DAEMON_V8_FLAGS], {}), []);
  assert.deepEqual(missingV8Flags(["--max-semi-space-size=64"], {}), []);
  assert.deepEqual(missingV8Flags([], { NODE_OPTIONS: "--enable-source-maps --max-semi-space-size=4" }), []);
  assert.deepEqual(missingV8Flags(["--heap-growing-percent", "10"], {}), []);
  assert.deepEqual(missingV8Flags([], { SF2LOKI_V8_FLAGS: "0" }), []);
});

test("the daemon's environment is missing until set; an operator's own value or SF2LOKI_V8_FLAGS=0 wins", () => {
  assert.deepEqual(missingDaemonEnv({}), DAEMON_ENV);
  assert.deepEqual(missingDaemonEnv({ ...DAEMON_ENV }), {});
  assert.deepEqual(missingDaemonEnv({ MALLOC_ARENA_MAX: "4" }), {});
  assert.deepEqual(missingDaemonEnv({ SF2LOKI_V8_FLAGS: "0" }), {});
});

/** `sim` keeps running once it printed its JSON line: by then any re-exec has happened, so the kernel's
 * view of the same pid shows the command line and environment the process runs with now. */
async function simProcess(
  env: NodeJS.ProcessEnv,
  t: { after: (fn: () => void) => void },
): Promise<{ argv: string[]; env: string[] }> {
  const child = spawn(process.execPath, [BIN, "sim", "--events", "1"], {
    stdio: ["ignore", "pipe", "ignore"],
    env,
  });
  t.after(() => child.kill("SIGKILL"));
  await once(child.stdout, "data");
  const read = (what: string): string[] =>
    readFileSync(`/proc/${child.pid}/${what}`, "utf8").split("\0").filter(Boolean);
  return { argv: read("cmdline"), env: read("environ") };
}

const withoutDaemonEnv = (): NodeJS.ProcessEnv => {
  const dropped = new Set([...Object.keys(DAEMON_ENV), "SF2LOKI_V8_FLAGS", "NODE_OPTIONS"]);
  return Object.fromEntries(Object.entries(process.env).filter(([name]) => !dropped.has(name)));
};

test("bin/sf2loki.js replaces itself with a process that has the flags and environment, keeping its arguments", async (t) => {
  const { argv, env } = await simProcess(withoutDaemonEnv(), t);
  for (const flag of DAEMON_V8_FLAGS) assert.ok(argv.includes(flag), `${flag} in ${argv.join(" ")}`);
  for (const [name, value] of Object.entries(DAEMON_ENV)) assert.ok(env.includes(`${name}=${value}`), name);
  assert.deepEqual(argv.slice(-3), ["sim", "--events", "1"]);
});

test("with SF2LOKI_V8_FLAGS=0 bin/sf2loki.js runs as started: no flags, no environment added", async (t) => {
  const { argv, env } = await simProcess({ ...withoutDaemonEnv(), SF2LOKI_V8_FLAGS: "0" }, t);
  for (const flag of DAEMON_V8_FLAGS) assert.ok(!argv.includes(flag), `${flag} not in ${argv.join(" ")}`);
  for (const name of Object.keys(DAEMON_ENV)) assert.ok(!env.some((e) => e.startsWith(`${name}=`)), name);
});

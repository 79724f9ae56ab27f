// `npx sf2loki` under a Node older than package.json's engines prints one line saying what was found,
// what is needed and how to get it, and exits 2: no loader stack (#29 item 5).
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { test } from "node:test";
import { promisify } from "node:util";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;
const run = promisify(execFile);

async function sf2loki(node: string, preload: string[] = []): Promise<{ code: number; stderr: string }> {
  try {
    const r = await run(node, [...preload, BIN, "--version"], {
      env: { ...process.env, SF2LOKI_V8_FLAGS: "0" },
    });
    return { code: 0, stderr: r.stderr };
  } catch (err) {
    const e = err as { code: number; stderr: string };
    return { code: e.code, stderr: e.stderr };
  }
}

function assertOneLine(r: { code: number; stderr: string }, found: string): void {
  assert.equal(r.code, 2, r.stderr);
  assert.equal(r.stderr.trimEnd().split("\n").length, 1, r.stderr);
  assert.match(
    r.stderr,
    new RegExp(`^sf2loki: Node ${found.replaceAll(".", "\\.")} found at .*; sf2loki needs Node >=22\\.12`),
  );
  assert.match(r.stderr, /source scripts\/use-node\.sh/);
  assert.doesNotMatch(r.stderr, /ERR_UNKNOWN_FILE_EXTENSION|\n\s+at /);
}

test("a Node older than engines (faked in this Node): one line, exit 2", async () => {
  const fake = 'data:text/javascript,Object.defineProperty(process.versions,"node",{value:"20.1.0"})';
  assertOneLine(await sf2loki(process.execPath, ["--import", fake]), "20.1.0");
});

test(
  "the machine's own old Node, where there is one: one line, exit 2",
  { skip: !existsSync("/usr/bin/node") && "no /usr/bin/node here" },
  async (t) => {
    const { stdout } = await run("/usr/bin/node", ["--version"]);
    const version = stdout.trim().replace(/^v/, "");
    const [major, minor] = version.split(".").map(Number) as [number, number];
    if (major > 22 || (major === 22 && minor >= 18)) {
      t.skip(`/usr/bin/node is ${version}, new enough`);
      return;
    }
    assertOneLine(await sf2loki("/usr/bin/node"), version);
  },
);

test("this Node runs it", async () => {
  const r = await run(process.execPath, [BIN, "--version"], {
    env: { ...process.env, SF2LOKI_V8_FLAGS: "0" },
  });
  assert.match(r.stdout, /^sf2loki \d+\.\d+\.\d+/);
});

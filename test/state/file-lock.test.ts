import assert from "node:assert/strict";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";
import { once } from "node:events";
import { readFile, stat, utimes, writeFile } from "node:fs/promises";
import { hostname } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { describe, test, type TestContext } from "node:test";
import { fileURLToPath } from "node:url";
import { StateFileLockError } from "../../src/state/errors.ts";
import { FileLock } from "../../src/state/file-lock.ts";
import { FileCheckpointStore, type FileStoreOptions } from "../../src/state/file-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { captureLogger } from "./helpers/capture-logger.ts";
import { tempDir } from "./helpers/temp-dir.ts";

const HOLDER = fileURLToPath(new URL("./fixtures/hold-file-lock.ts", import.meta.url));

function open(t: TestContext, path: string, opts: FileStoreOptions = {}): FileCheckpointStore {
  const store = new FileCheckpointStore({ path }, { ...opts, lock: { heartbeatMs: 0, ...opts.lock } });
  t.after(() => store.close());
  return store;
}

/** Starts a child node process that opens the store at `path` and holds its lock until stdin ends. */
async function holderProcess(t: TestContext, path: string, mode: "close" | "exit" = "close") {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, [HOLDER, path, mode], {
    stdio: ["pipe", "pipe", "pipe"],
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  });
  let stderr = "";
  child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
  const lines = createInterface({ input: child.stdout });
  const [first] = (await Promise.race([
    once(lines, "line"),
    once(child, "exit").then(() => assert.fail(`holder exited early: ${stderr}`)),
  ])) as [string];
  assert.equal(first, "locked");
  return child;
}

async function lockedError(store: FileCheckpointStore): Promise<StateFileLockError> {
  try {
    await store.load("k");
  } catch (e) {
    assert.ok(e instanceof StateFileLockError, `expected StateFileLockError, got ${String(e)}`);
    return e;
  }
  return assert.fail("expected the lock to be refused");
}

describe("file store exclusive-instance lock", () => {
  test("a lock held by another process names its pid; it is free again once that process closes", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const child = await holderProcess(t, path);

    const err = await lockedError(open(t, path));
    assert.equal(err.code, "SF2LOKI_STATE_FILE_LOCKED");
    assert.equal(err.holderPid, child.pid);
    assert.ok(err.message.includes(`pid ${child.pid} on this host`));
    assert.ok(err.message.includes(`${path}.lock`));
    assert.match(err.message, /Stop the other process/);

    child.stdin.end();
    await once(child, "exit");
    const store = open(t, path);
    await store.commit("k", "v");
    assert.equal(await store.load("k"), "v");
  });

  test("a process that exits without close() still releases the lock (exit hook)", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const child = await holderProcess(t, path, "exit");
    child.stdin.end();
    await once(child, "exit");
    await assert.rejects(stat(`${path}.lock`), { code: "ENOENT" });
  });

  test("a killed holder leaves a stale lock that the next process takes over, with a WARN", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const child = await holderProcess(t, path);
    child.kill("SIGKILL");
    await once(child, "exit");
    const left = JSON.parse(await readFile(`${path}.lock`, "utf8")) as { pid: number };
    assert.equal(left.pid, child.pid, "SIGKILL skipped every cleanup");

    const log = captureLogger();
    const store = open(t, path, { logger: log.logger });
    await store.commit("k", "v");
    assert.ok(log.warnings().some((l) => /stale state lock/.test(l.msg)));
    const now = JSON.parse(await readFile(`${path}.lock`, "utf8")) as { pid: number };
    assert.equal(now.pid, process.pid);
  });

  test("a second instance in the same process fails fast; exclusiveLock: false shares the file", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const first = open(t, path);
    await first.commit("a", "1");
    const err = await lockedError(open(t, path));
    assert.equal(err.holderPid, process.pid);

    const shared = open(t, path, { exclusiveLock: false });
    assert.equal(await shared.load("a"), "1");
    await first.close();
    await first.close();
    const third = open(t, path);
    assert.equal(await third.load("a"), "1");
  });

  test("the lock is taken lazily and survives reset()", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const store = open(t, path);
    await assert.rejects(stat(`${path}.lock`), { code: "ENOENT" });
    await store.load("k");
    store.reset();
    await store.load("k");
    await lockedError(open(t, path));
    assert.equal((await stat(`${path}.lock`)).mode & 0o777, 0o644);
  });

  test("a lock from a dead pid on this host is stale; a live one is not", async (t) => {
    const path = join(await tempDir(t), "state.json");
    await writeFile(`${path}.lock`, JSON.stringify({ pid: 424242, hostname: hostname() }));
    await lockedError(open(t, path, { lock: { isAlive: () => true } }));
    await open(t, path, { lock: { isAlive: () => false } }).load("k");
  });

  test("our own pid in a lock this process does not hold is a previous incarnation (restarted container)", async (t) => {
    const path = join(await tempDir(t), "state.json");
    await writeFile(`${path}.lock`, JSON.stringify({ pid: process.pid, hostname: hostname() }));
    await open(t, path).load("k");
  });

  test("a lock from another host is held while refreshed and abandoned once its mtime goes stale", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const clock = new ManualClock({ startMs: Date.UTC(2030, 0, 1) });
    await writeFile(`${path}.lock`, JSON.stringify({ pid: 7, hostname: "other-node" }));
    const fresh = new Date(clock.now() - 10_000);
    await utimes(`${path}.lock`, fresh, fresh);
    const err = await lockedError(open(t, path, { clock }));
    assert.match(err.message, /pid 7 on host other-node/);

    const old = new Date(clock.now() - 120_000);
    await utimes(`${path}.lock`, old, old);
    await open(t, path, { clock }).load("k");
  });

  test("the holder refreshes the lock's mtime (the heartbeat's job) with the injected clock", async (t) => {
    const path = join(await tempDir(t), "state.json");
    const clock = new ManualClock({ startMs: Date.UTC(2031, 5, 1) });
    const lock = new FileLock(path, { clock, heartbeatMs: 0 });
    t.after(() => lock.release());
    await lock.acquire();
    clock.advance(30_000);
    await lock.refresh();
    assert.equal((await stat(`${path}.lock`)).mtimeMs, clock.now());
    await lock.release();
    await lock.refresh();
    await assert.rejects(stat(`${path}.lock`), { code: "ENOENT" });
  });

  test("a fresh lock file with no holder record is left alone (its creator may be mid-write)", async (t) => {
    const path = join(await tempDir(t), "state.json");
    await writeFile(`${path}.lock`, "");
    const err = await lockedError(open(t, path, { lock: { isAlive: () => false } }));
    assert.equal(err.holderPid, undefined);
    assert.match(err.message, /cannot be read/);
  });

  test("the Python sf2loki's leftover empty lock is taken over with exactly one WARN naming the file (#10)", async (t) => {
    const path = join(await tempDir(t), "state.json");
    await writeFile(path, JSON.stringify({ "pubsub:/event/LoginEventStream": "AAAAAAAAAAE=" }));
    await writeFile(`${path}.lock`, "");
    const old = new Date(Date.now() - 60_000);
    await utimes(`${path}.lock`, old, old);
    const log = captureLogger();
    const store = open(t, path, { logger: log.logger });
    assert.equal(await store.load("pubsub:/event/LoginEventStream"), "AAAAAAAAAAE=");
    const warnings = log.warnings();
    assert.equal(warnings.length, 1, JSON.stringify(warnings));
    assert.ok(warnings[0]!.msg.includes(`${path}.lock`), warnings[0]!.msg);
    assert.match(warnings[0]!.msg, /names no holder/);
    const record = JSON.parse(await readFile(`${path}.lock`, "utf8")) as { pid: number };
    assert.equal(record.pid, process.pid, "the lock is ours now");
    await store.commit("k", "v");
  });
});

import assert from "node:assert/strict";
import { readdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test, type TestContext } from "node:test";
import { Sf2LokiError } from "../../src/errors.ts";
import { StateFenceError, StateFileCorruptError } from "../../src/state/errors.ts";
import { FileCheckpointStore, type FileStoreOptions } from "../../src/state/file-store.ts";
import { nodeStateFs, type StateFs } from "../../src/state/state-fs.ts";
import { captureLogger } from "./helpers/capture-logger.ts";
import { testFence } from "../support/fakes.ts";
import { tempDir } from "./helpers/temp-dir.ts";

async function storeIn(t: TestContext, opts: FileStoreOptions = {}, name = "state.json") {
  const dir = await tempDir(t);
  const path = join(dir, name);
  const store = new FileCheckpointStore({ path }, { lock: { heartbeatMs: 0 }, ...opts });
  t.after(() => store.close());
  return { dir, path, store };
}

async function readJson(path: string): Promise<unknown> {
  return JSON.parse(await readFile(path, "utf8"));
}

describe("file store", () => {
  test("a missing file is an empty document; the first commit creates the directory and the file", async (t) => {
    const path = join(await tempDir(t), "nested", "state.json");
    const store = new FileCheckpointStore({ path });
    t.after(() => store.close());
    assert.equal(await store.load("k1"), undefined);
    await store.commit("k1", "v1");
    assert.equal(await readFile(path, "utf8"), '{"k1":"v1"}');
    assert.equal((await stat(path)).mode & 0o777, 0o600);
    assert.equal(await store.load("k1"), "v1");
    assert.equal(await store.load("constructor"), undefined);
  });

  test("20 concurrent commits leave a valid document holding every key and no temp files", async (t) => {
    const { dir, path, store } = await storeIn(t);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.commit(`k${i}`, `v${i}`)));
    const doc = (await readJson(path)) as Record<string, string>;
    assert.equal(Object.keys(doc).length, 20);
    for (let i = 0; i < 20; i++) assert.equal(doc[`k${i}`], `v${i}`);
    assert.deepEqual((await readdir(dir)).sort(), ["state.json", "state.json.lock"]);
  });

  test("a crash between write and rename leaves the old document intact, and the cache unchanged", async (t) => {
    let failRename = false;
    const fs: StateFs = {
      ...nodeStateFs,
      rename: async (from, to) => {
        if (failRename) throw Object.assign(new Error("simulated crash before rename"), { code: "EIO" });
        await nodeStateFs.rename(from, to);
      },
    };
    const { dir, path, store } = await storeIn(t, { fs });
    await store.commit("k1", "v1");

    failRename = true;
    await assert.rejects(store.commit("k2", "v2"), /simulated crash/);
    assert.deepEqual(await readJson(path), { k1: "v1" });
    assert.equal(await store.load("k2"), undefined, "a failed write never reaches the cache");
    assert.deepEqual(
      (await readdir(dir)).sort(),
      ["state.json", "state.json.lock"],
      "the temp file is removed",
    );

    failRename = false;
    await store.commit("k3", "v3");
    assert.deepEqual(await readJson(path), { k1: "v1", k3: "v3" });
  });

  test("a stray temp file from a crashed writer is ignored", async (t) => {
    const { dir, path, store } = await storeIn(t);
    await store.commit("k1", "v1");
    await writeFile(join(dir, ".state.json.deadbeef.tmp"), '{"k1":"half-writ');
    const fresh = new FileCheckpointStore({ path }, { exclusiveLock: false });
    assert.equal(await fresh.load("k1"), "v1");
    await store.commit("k2", "v2");
    assert.deepEqual(await readJson(path), { k1: "v1", k2: "v2" });
  });

  for (const [what, bytes, problem] of [
    ["truncated JSON", '{"k1": "v1"', /invalid JSON/],
    ["invalid UTF-8", Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), /UTF-8/],
    ["a JSON array", "[]", /array, not an object/],
    ["a non-string value", '{"k1": null}', /"k1" is a JSON null/],
  ] as const) {
    test(`${what} is a StateFileCorruptError naming the path; the file is never touched`, async (t) => {
      const { path, store } = await storeIn(t);
      await store.commit("seed", "x");
      await writeFile(path, bytes);
      store.reset();
      for (const op of [() => store.load("k1"), () => store.commit("k2", "v2"), () => store.snapshot()]) {
        await assert.rejects(op(), (e: unknown) => {
          assert.ok(e instanceof StateFileCorruptError);
          assert.equal(e.code, "SF2LOKI_STATE_FILE_CORRUPT");
          assert.ok(e.message.includes(path));
          assert.match(e.message, problem);
          assert.match(e.message, /move it aside/);
          return true;
        });
      }
      assert.deepEqual(await readFile(path), Buffer.from(bytes));
    });
  }

  test("commitMany is one write; deleting an absent key writes nothing", async (t) => {
    let renames = 0;
    const fs: StateFs = { ...nodeStateFs, rename: (a, b) => (renames++, nodeStateFs.rename(a, b)) };
    const { path, store } = await storeIn(t, { fs });
    await store.commitMany({ a: "1", b: "2", c: "3" });
    assert.equal(renames, 1);
    await store.delete("absent");
    assert.equal(renames, 1);
    await store.delete("b");
    assert.equal(renames, 2);
    assert.deepEqual(await readJson(path), { a: "1", c: "3" });
  });

  test("the fence runs first: nothing is locked, read or written when it throws", async (t) => {
    const { path, store } = await storeIn(t);
    store.setFence(
      testFence({
        check: () => {
          throw new StateFenceError("not the leader");
        },
      }),
    );
    await assert.rejects(store.commit("k1", "v1"), StateFenceError);
    await assert.rejects(store.delete("k1"), StateFenceError);
    await assert.rejects(stat(`${path}.lock`), { code: "ENOENT" });
    await assert.rejects(stat(path), { code: "ENOENT" });
  });

  test("snapshot reads fresh from disk and hides the reserved epoch key", async (t) => {
    const { path, store } = await storeIn(t, { exclusiveLock: false });
    await store.commit("k1", "v1");
    await writeFile(path, JSON.stringify({ k1: "edited", __fence_epoch__: "4" }));
    assert.deepEqual(await store.snapshot(), { k1: "edited" });
    await store.commit("k2", "v2");
    assert.deepEqual(await readJson(path), { k1: "edited", __fence_epoch__: "4", k2: "v2" });
  });

  describe("epoch-fenced path", () => {
    test("stamps the epoch as a string and refuses a stale leader without writing", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      let epoch = 3;
      store.setFence(testFence({ epoch: () => epoch }));
      await store.commit("k1", "v1");
      assert.deepEqual(await readJson(path), { k1: "v1", __fence_epoch__: "3" });
      await store.commit("k2", "v2");

      await writeFile(path, JSON.stringify({ k1: "newer", __fence_epoch__: "5" }));
      await assert.rejects(store.commit("k3", "v3"), (e: unknown) => {
        assert.ok(e instanceof StateFenceError);
        assert.equal(e.code, "SF2LOKI_STATE_FENCED");
        assert.match(e.message, /term \(epoch 3\) was superseded by epoch 5/);
        return true;
      });
      await assert.rejects(store.delete("k1"), StateFenceError);
      assert.deepEqual(await readJson(path), { k1: "newer", __fence_epoch__: "5" });

      epoch = 5;
      await store.commit("k3", "v3");
      assert.deepEqual(await readJson(path), { k1: "newer", __fence_epoch__: "5", k3: "v3" });
    });

    test("re-reads the file on every write, so another leader's keys are never reverted", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      store.setFence(testFence({ epoch: () => 1 }));
      await store.commit("k1", "v1");
      await writeFile(path, JSON.stringify({ k1: "v1", other: "x", __fence_epoch__: "1" }));
      await store.commit("k2", "v2");
      assert.deepEqual(await readJson(path), { k1: "v1", other: "x", __fence_epoch__: "1", k2: "v2" });
      await writeFile(path, JSON.stringify({ k9: "fresh", __fence_epoch__: "1" }));
      await store.delete("absent");
      assert.equal(await store.load("k9"), "fresh", "a no-op delete still refreshes the cache");
    });

    test("an older term's document that lands after this term wrote is replaced whole, not built on", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      store.setFence(testFence({ epoch: () => 2 }));
      await store.commit("pubsub:A", "a-200");
      await store.commit("pubsub:B", "b-200");
      // A former leader (epoch 1), paused between its last fence check and its rename, lands now.
      await writeFile(
        path,
        JSON.stringify({
          "pubsub:A": "a-150",
          "pubsub:B": "b-150",
          "pubsub:C": "c-150",
          __fence_epoch__: "1",
        }),
      );
      await store.commit("pubsub:A", "a-210");
      assert.deepEqual(await readJson(path), {
        "pubsub:A": "a-210",
        "pubsub:B": "b-200",
        __fence_epoch__: "2",
      });
      assert.equal(await store.load("pubsub:B"), "b-200");
    });

    test("an older term's document found before this term's first write is built on (the term claim reads it)", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      await writeFile(path, JSON.stringify({ "pubsub:A": "a-150", __fence_epoch__: "1" }));
      store.setFence(testFence({ epoch: () => 2 }));
      await store.commit("pubsub:B", "b-1");
      assert.deepEqual(await readJson(path), {
        "pubsub:A": "a-150",
        __fence_epoch__: "2",
        "pubsub:B": "b-1",
      });
    });

    test("the fence is checked again after the temp file is durable, right before the rename (#17)", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      await writeFile(path, JSON.stringify({ k1: "v1", __fence_epoch__: "2" }));
      let checks = 0;
      store.setFence(
        testFence({
          epoch: () => 2,
          check: () => {
            // The first check passes; the term ends while the temp file is written and synced.
            if (++checks > 1) throw new StateFenceError("term ended mid-write");
          },
        }),
      );
      await assert.rejects(store.commit("k2", "v2"), /term ended mid-write/);
      assert.equal(checks, 2);
      assert.deepEqual(await readJson(path), { k1: "v1", __fence_epoch__: "2" }, "nothing renamed over");
      const leftovers = (await readdir(join(path, ".."))).filter((f) => f.endsWith(".tmp"));
      assert.deepEqual(leftovers, [], "the temp file is removed");
    });

    test("the fence runs before the epoch check", async (t) => {
      const { path, store } = await storeIn(t, { exclusiveLock: false });
      await writeFile(path, JSON.stringify({ __fence_epoch__: "9" }));
      store.setFence(
        testFence({
          epoch: () => 1,
          check: () => {
            throw new StateFenceError("fence says no");
          },
        }),
      );
      await assert.rejects(store.commit("k", "v"), /fence says no/);
    });

    test("a non-numeric stored epoch is logged and treated as absent, then repaired", async (t) => {
      const log = captureLogger();
      const { path, store } = await storeIn(t, { exclusiveLock: false, logger: log.logger });
      await writeFile(path, JSON.stringify({ k1: "v1", __fence_epoch__: "banana" }));
      store.setFence(testFence({ epoch: () => 2 }));
      await store.commit("k2", "v2");
      assert.deepEqual(await readJson(path), { k1: "v1", __fence_epoch__: "2", k2: "v2" });
      assert.ok(log.warnings().some((l) => /not a number/.test(l.msg)));
    });
  });

  test("errors carry stable codes and are Sf2LokiErrors", async (t) => {
    const { path, store } = await storeIn(t);
    await writeFile(path, "{");
    await assert.rejects(store.load("k"), (e: unknown) => e instanceof Sf2LokiError);
  });
});

// The lazily loaded object backend: a store closed while its SDK is still loading closes the client
// that load produces, so it never outlives the store.
import assert from "node:assert/strict";
import { test } from "node:test";
import type { ObjectStoreHints } from "../../src/state/errors.ts";
import { LazyFolder } from "../../src/deadletter/folders/lazy.ts";
import type { ObjectFolder } from "../../src/deadletter/object-folder.ts";
import { LazyBackend } from "../../src/state/lazy-backend.ts";
import type { ObjectBackend } from "../../src/state/object-backend.ts";

const HINTS = { location: "s3://b/k", configKey: "state.s3.key", noun: "key" } as unknown as ObjectStoreHints;

function fakeBackend(closed: string[]): ObjectBackend {
  return {
    hints: HINTS,
    get: () => Promise.resolve(undefined),
    put: () => Promise.resolve("v1"),
    classify: () => "other",
    close: () => {
      closed.push("client");
      return Promise.resolve();
    },
  };
}

test("close() during the SDK load closes the client the load produces", async () => {
  const closed: string[] = [];
  let finish!: (b: ObjectBackend) => void;
  const lazy = new LazyBackend(HINTS, "the fake SDK", () => new Promise((resolve) => (finish = resolve)));
  const reading = lazy.get(new AbortController().signal);
  const closing = lazy.close();
  finish(fakeBackend(closed));
  await reading;
  await closing;
  assert.deepEqual(closed, ["client"]);
});

test("close() of a store that never loaded its SDK loads nothing", async () => {
  let loads = 0;
  const lazy = new LazyBackend(HINTS, "the fake SDK", () => {
    loads++;
    return Promise.resolve(fakeBackend([]));
  });
  await lazy.close();
  assert.equal(loads, 0);
});

test("a dead-letter folder closed during its SDK load closes the client the load produces", async () => {
  const closed: string[] = [];
  let finish!: (f: ObjectFolder) => void;
  const lazy = new LazyFolder(
    "s3://b/dl/",
    "the fake SDK",
    () => new Promise((resolve) => (finish = resolve)),
  );
  const listing = lazy.list(new AbortController().signal);
  const closing = lazy.close();
  finish({
    location: "s3://b/dl/",
    list: () => Promise.resolve([]),
    get: () => Promise.resolve(undefined),
    put: () => Promise.resolve(),
    delete: () => Promise.resolve(),
    close: () => {
      closed.push("client");
      return Promise.resolve();
    },
  });
  await listing;
  await closing;
  assert.deepEqual(closed, ["client"]);
});

test("a failed SDK load names the library and what to do, and is tried again next time", async () => {
  let loads = 0;
  const lazy = new LazyBackend(HINTS, "the fake SDK", () => {
    loads++;
    return loads === 1 ? Promise.reject(new Error("EMFILE")) : Promise.resolve(fakeBackend([]));
  });
  await assert.rejects(
    lazy.get(new AbortController().signal),
    /s3:\/\/b\/k: the fake SDK cannot be loaded \(EMFILE\); reinstall sf2loki/,
  );
  assert.equal(await lazy.get(new AbortController().signal), undefined);
  assert.equal(loads, 2);
});

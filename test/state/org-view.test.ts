import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { FileCheckpointStore } from "../../src/state/file-store.ts";
import { OrgCheckpointView } from "../../src/state/org-view.ts";
import { testFence } from "../support/fakes.ts";
import { tempDir } from "./helpers/temp-dir.ts";

describe("multi-org checkpoint view", () => {
  test("prefixes every key with org=<name>: on the shared store", async (t) => {
    const store = new FileCheckpointStore(
      { path: join(await tempDir(t), "s.json") },
      { exclusiveLock: false },
    );
    const prod = new OrgCheckpointView(store, "prod");
    await prod.commit("pubsub:/event/X", "a");
    await prod.commitMany({ apexlog: "b", "eventlogfile:Login": "c" });
    assert.deepEqual(await store.snapshot(), {
      "org=prod:pubsub:/event/X": "a",
      "org=prod:apexlog": "b",
      "org=prod:eventlogfile:Login": "c",
    });
    assert.equal(await prod.load("apexlog"), "b");
    await prod.delete("apexlog");
    assert.equal(await store.load("org=prod:apexlog"), undefined);
  });

  test("only the first org falls back to the legacy unprefixed key, which is never deleted", async (t) => {
    const store = new FileCheckpointStore(
      { path: join(await tempDir(t), "s.json") },
      { exclusiveLock: false },
    );
    await store.commitMany({ apexlog: "legacy", "egress:budget": "{}" });
    const first = new OrgCheckpointView(store, "prod", { legacyFallback: true });
    const second = new OrgCheckpointView(store, "dev");
    assert.equal(await first.load("apexlog"), "legacy");
    assert.equal(await second.load("apexlog"), undefined);

    await first.commit("apexlog", "migrated");
    assert.equal(await first.load("apexlog"), "migrated");
    assert.equal(await store.load("apexlog"), "legacy");
    assert.deepEqual(await first.snapshot(), { apexlog: "migrated", "egress:budget": "{}" });
    assert.deepEqual(await second.snapshot(), {});
  });

  test("an empty org name is the identity view", async (t) => {
    const store = new FileCheckpointStore(
      { path: join(await tempDir(t), "s.json") },
      { exclusiveLock: false },
    );
    const view = new OrgCheckpointView(store, "", { legacyFallback: true });
    await view.commit("apexlog", "x");
    assert.deepEqual(await store.snapshot(), { apexlog: "x" });
    assert.deepEqual(await view.snapshot(), { apexlog: "x" });
    assert.equal(view.location, store.location);
  });

  test("fence, epoch, reset and close pass straight through", async (t) => {
    const path = join(await tempDir(t), "s.json");
    const store = new FileCheckpointStore({ path }, { exclusiveLock: false });
    const view = new OrgCheckpointView(store, "prod");
    view.setFence(testFence({ epoch: () => 2 }));
    await view.commit("k", "v");
    assert.equal(await store.load("__fence_epoch__"), "2");
    assert.equal(await view.readFenceEpoch(), 2);
    view.setFence(
      testFence({
        check: () => {
          throw new Error("fenced");
        },
      }),
    );
    await assert.rejects(store.commit("x", "y"), /fenced/);
    view.setFence(undefined);
    view.reset();
    assert.equal(await view.load("k"), "v");
    await view.close();
  });
});

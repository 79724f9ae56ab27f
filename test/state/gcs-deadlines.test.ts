// Every GCS request ends (#17): the real @google-cloud/storage client goes through a fault proxy in
// front of the GCS emulator; a keep-alive connection that died silently costs one deadline, then the
// object-store retry loop succeeds on a fresh connection.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { GcsTimeoutError, withGcsDeadline } from "../../src/state/gcs-deadline.ts";
import { GCS_REQUEST_TIMEOUT_MS, GcsBackend, GcsCheckpointStore } from "../../src/state/gcs-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { GcsEmulator, gcsRequests } from "../support/gcs-emulator.ts";
import { faults } from "../support/object-store-emulator.ts";
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;

async function rig(t: TestContext) {
  const emulator = new GcsEmulator({ buckets: [BUCKET] });
  await emulator.start();
  const proxy = await TcpFaultProxy.start(emulator.url);
  const settings = { bucket: BUCKET, object_name: OBJECT, endpoint_url: proxy.url };
  const clock = new ManualClock();
  const store = new GcsCheckpointStore(settings, { clock, requestTimeoutMs: SHORT });
  t.after(async () => {
    await store.close();
    await proxy.close();
    await emulator.close();
  });
  const stored = () => emulator.getObject(BUCKET, OBJECT)?.bytes.toString();
  return { emulator, proxy, store, clock, stored, backend: new GcsBackend(settings) };
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

describe("GCS store deadlines", { timeout: 15_000 }, () => {
  test("default: 30 s per request", () => {
    assert.equal(GCS_REQUEST_TIMEOUT_MS, 30_000);
  });

  test("an upload on a dead keep-alive connection times out and the retry lands on a fresh one", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    await sleep(20); // lets the client pool the socket, so the next request reuses it
    const warm = r.proxy.stats.accepted;

    r.proxy.blackhole();
    r.proxy.heal();
    const ms = await timed(() => r.store.commit("k2", "v2"));

    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.ok(r.proxy.stats.accepted > warm, "the retry opened a fresh connection");
    // Known limit (gcs-deadline.ts): the library's transport cannot be aborted while it waits for a
    // response, so the dead socket is abandoned, not closed; only the kernel reclaims it.
    assert.equal(r.proxy.stats.open, 2, "the dead socket is abandoned, the fresh one pooled");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive connection → upload retried after ${ms.toFixed(0)} ms`);
  });

  test("a download on a dead keep-alive connection times out and is retried", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    r.store.reset(); // the next load reads the object again
    await sleep(20);
    r.proxy.blackhole();
    r.proxy.heal();
    let value: string | undefined;
    const ms = await timed(async () => {
      value = await r.store.load("k1");
    });
    assert.equal(value, "v1");
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive connection → download retried after ${ms.toFixed(0)} ms`);
  });

  test("a caller's abort ends a call with the caller's reason, which is not retried", async () => {
    const ctl = new AbortController();
    const never = new Promise<never>(() => undefined);
    const call = withGcsDeadline(60_000, ctl.signal, "upload to gs://b/o", () => never);
    ctl.abort(new DOMException("stopping", "AbortError"));
    await assert.rejects(call, (err: unknown) => {
      assert.equal((err as Error).name, "AbortError");
      assert.equal(new GcsBackend({ bucket: "b", object_name: "o" }).classify(err), "other");
      return true;
    });
    await assert.rejects(
      withGcsDeadline(10, new AbortController().signal, "download of gs://b/o", () => never),
      (err: unknown) =>
        err instanceof GcsTimeoutError &&
        /download of gs:\/\/b\/o got no complete answer within 10 ms/.test(err.message),
    );
  });

  test("a partition mid-request swallows the answer to a upload that landed: the deadline ends the wait, the retry finds it ours", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    // The request has fully arrived; the answer goes out on a connection that just went silent.
    r.emulator.inject(
      gcsRequests.upload(),
      faults.before(() => {
        r.proxy.blackhole();
        r.proxy.heal();
      }),
    );
    const ms = await timed(() => r.store.commit("k2", "v2"));
    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.equal(
      r.emulator.count(gcsRequests.upload()),
      3,
      "k1, the swallowed k2, and its retry (412, verified ours)",
    );
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`answer lost in a silent partition → write confirmed after ${ms.toFixed(0)} ms`);
  });

  test("a blackhole that never heals ends in a transient error after the store's attempts, not a hang", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    r.proxy.blackhole();
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await r.store.commit("k2", "v2").then(
        () => undefined,
        (err: unknown) => err,
      );
    });
    assert.ok(caught instanceof Error, "the commit failed");
    assert.equal(r.backend.classify(caught), "transient", `classified transient: ${String(caught)}`);
    assert.equal(r.clock.sleeps.length, 3, "4 attempts");
    assert.ok(ms < 4 * SHORT + 2000, `took ${ms.toFixed(0)} ms`);
    assert.equal(r.stored(), '{"k1":"v1"}');
    t.diagnostic(`4 silent attempts → failed after ${ms.toFixed(0)} ms`);
  });
});

// Every S3 request ends (#17): a keep-alive connection that died silently (a dropped NAT entry, a
// partition healed without resets) must cost one deadline and a retry on a fresh connection, never a
// wedged store. The real SDK client goes through a fault proxy in front of the S3 emulator.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import {
  S3Backend,
  S3CheckpointStore,
  S3_DEADLINES,
  s3ClientConfig,
  type S3Deadlines,
} from "../../src/state/s3-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { S3Emulator, s3Requests } from "../support/s3-emulator.ts";
import { faults } from "../support/object-store-emulator.ts";
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;
const credentials = { accessKeyId: "test", secretAccessKey: "test" };

async function rig(t: TestContext, deadlines: S3Deadlines) {
  const emulator = new S3Emulator({ buckets: [BUCKET] });
  await emulator.start();
  const proxy = await TcpFaultProxy.start(emulator.url);
  const settings = { bucket: BUCKET, key: OBJECT, endpoint_url: proxy.url };
  const store = new S3CheckpointStore(settings, {
    clock: new ManualClock(),
    clientConfig: { credentials },
    deadlines,
  });
  t.after(async () => {
    await store.close();
    await proxy.close();
    await emulator.close();
  });
  const stored = () => emulator.getObject(BUCKET, OBJECT)?.bytes.toString();
  return { emulator, proxy, store, stored, backend: new S3Backend(settings, { credentials }) };
}

/** Runs `fn` and returns how long it took, in ms. */
async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

describe("S3 store deadlines", { timeout: 10_000 }, () => {
  test("defaults: every phase bounded, and the request deadline throws instead of warning", () => {
    const handler = s3ClientConfig({ bucket: "b", key: "k" }).requestHandler as Record<string, unknown>;
    assert.deepEqual(handler, {
      connectionTimeout: S3_DEADLINES.connectMs,
      requestTimeout: S3_DEADLINES.requestMs,
      throwOnRequestTimeout: true,
      socketTimeout: S3_DEADLINES.socketIdleMs,
    });
    assert.ok(S3_DEADLINES.requestMs >= 10_000 && S3_DEADLINES.requestMs <= 30_000);
  });

  test("request deadline: a PUT on a dead keep-alive socket times out and the retry lands on a fresh one", async (t) => {
    // The socket-idle deadline is far away, so only throwOnRequestTimeout can end the first attempt.
    const r = await rig(t, { connectMs: 5_000, requestMs: SHORT, socketIdleMs: 60_000 });
    await r.store.commit("k1", "v1");
    assert.equal(r.proxy.stats.accepted, 1, "one keep-alive connection so far");

    r.proxy.blackhole();
    r.proxy.heal(); // the kept-alive connection is dead for good; new ones work
    const ms = await timed(() => r.store.commit("k2", "v2"));

    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    assert.equal(r.proxy.stats.accepted, 2, "the retry opened a fresh connection");
    assert.equal(r.proxy.stats.open, 1, "the SDK closed the dead socket");
    t.diagnostic(`dead keep-alive socket → retried after ${ms.toFixed(0)} ms`);
  });

  test("socket-idle deadline: a GET on a dead keep-alive socket times out and is retried", async (t) => {
    const r = await rig(t, { connectMs: 5_000, requestMs: 60_000, socketIdleMs: SHORT });
    await r.store.commit("k1", "v1");
    const reader = new S3CheckpointStore(
      { bucket: BUCKET, key: OBJECT, endpoint_url: r.proxy.url },
      {
        clock: new ManualClock(),
        clientConfig: { credentials },
        deadlines: { connectMs: 5_000, requestMs: 60_000, socketIdleMs: SHORT },
      },
    );
    t.after(() => reader.close());
    await reader.load("k1"); // opens the reader's keep-alive connection
    reader.reset(); // the next load reads the object again
    r.proxy.blackhole();
    r.proxy.heal();
    let value: string | undefined;
    const ms = await timed(async () => {
      value = await reader.load("k1");
    });
    assert.equal(value, "v1");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive socket → GET retried after ${ms.toFixed(0)} ms`);
  });

  test("a partition mid-request swallows the answer to a PUT that landed: the deadline ends the wait, the retry finds it ours", async (t) => {
    const r = await rig(t, { connectMs: 5_000, requestMs: SHORT, socketIdleMs: SHORT });
    await r.store.commit("k1", "v1");
    // The request has fully arrived; the answer goes out on a connection that just went silent.
    r.emulator.inject(
      s3Requests.put(),
      faults.before(() => {
        r.proxy.blackhole();
        r.proxy.heal();
      }),
    );
    const ms = await timed(() => r.store.commit("k2", "v2"));
    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.equal(
      r.emulator.count(s3Requests.put()),
      3,
      "k1, the swallowed k2, and its retry (412, verified ours)",
    );
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`answer lost in a silent partition → write confirmed after ${ms.toFixed(0)} ms`);
  });

  test("a blackhole that never heals ends in a transient error after the store's attempts, not a hang", async (t) => {
    const r = await rig(t, { connectMs: 5_000, requestMs: SHORT, socketIdleMs: SHORT });
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
    assert.equal(r.proxy.stats.accepted, 4, "every retry was a fresh connection");
    assert.ok(ms < 4 * SHORT + 2000, `took ${ms.toFixed(0)} ms`);
    assert.equal(r.stored(), '{"k1":"v1"}');
    t.diagnostic(`4 silent attempts → failed after ${ms.toFixed(0)} ms`);
  });
});

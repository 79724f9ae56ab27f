// The dead-connection cases every object store must pass (#17), run against S3 and GCS with the real
// SDK client behind a fault proxy: a silently dead keep-alive connection costs one deadline and a
// retry on a fresh connection, an answer swallowed mid-request is recovered by the verify-before-
// conflict rule, and a blackhole that never heals ends in a transient error instead of a hang.
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import type { ObjectBackend } from "../../../src/state/object-backend.ts";
import type { CheckpointStore } from "../../../src/state/store.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import {
  faults,
  type InMemoryObjectEmulator,
  type ObjectStoreEmulatorServer,
  type RequestMatcher,
} from "../../support/object-store-emulator.ts";
import { TcpFaultProxy } from "../../support/tcp-fault-proxy.ts";
import { failureOf, idle, timed } from "../../support/timing.ts";
import { BUCKET, OBJECT } from "./object-store-harness.ts";

export interface DeadlineRig {
  readonly emulator: ObjectStoreEmulatorServer;
  readonly proxy: TcpFaultProxy;
  /** A store reaching the emulator through the proxy, with a `short` ms deadline. */
  readonly store: CheckpointStore;
  readonly clock: ManualClock;
  /** A backend over the same object, for its error classification. */
  readonly backend: ObjectBackend;
  readonly writes: RequestMatcher;
  /**
   * True when the client aborts a timed-out request and closes its socket (S3); false when it can
   * only abandon it to the kernel (GCS, see src/state/gcs-deadline.ts).
   */
  readonly closesTimedOutSockets: boolean;
  /** The object's bytes as text. */
  stored(): string | undefined;
}

/**
 * The started `emulator` behind a fault proxy, a store built on the proxy's URL and a manual clock;
 * store, proxy and emulator are closed when the test ends.
 */
export async function behindProxy<S extends CheckpointStore>(
  t: TestContext,
  emulator: InMemoryObjectEmulator<{ bytes: Buffer }, unknown>,
  makeStore: (endpointUrl: string, clock: ManualClock) => S,
): Promise<{ proxy: TcpFaultProxy; store: S; clock: ManualClock; stored: () => string | undefined }> {
  await emulator.start();
  const proxy = await TcpFaultProxy.start(emulator.url);
  const clock = new ManualClock();
  const store = makeStore(proxy.url, clock);
  t.after(async () => {
    await store.close();
    await proxy.close();
    await emulator.close();
  });
  return { proxy, store, clock, stored: () => emulator.getObject(BUCKET, OBJECT)?.bytes.toString() };
}

export function deadlineCases(short: number, rig: (t: TestContext) => Promise<DeadlineRig>): void {
  const inTime = (ms: number): void => {
    assert.ok(ms >= short - 20 && ms < short + 1500, `took ${ms.toFixed(0)} ms`);
  };

  test("a write on a dead keep-alive connection times out and the retry lands on a fresh one", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    await idle();
    const warm = r.proxy.stats.accepted;
    r.proxy.blackhole();
    r.proxy.heal(); // the kept-alive connection is dead for good; new ones work
    const ms = await timed(() => r.store.commit("k2", "v2"));
    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.ok(r.proxy.stats.accepted > warm, "the retry opened a fresh connection");
    // The fresh connection is pooled; the dead one is closed, or left to the kernel when it cannot be.
    assert.equal(r.proxy.stats.open, r.closesTimedOutSockets ? 1 : 2, "the dead socket's fate");
    inTime(ms);
    t.diagnostic(`dead keep-alive connection → write retried after ${ms.toFixed(0)} ms`);
  });

  test("a read on a dead keep-alive connection times out and is retried", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    r.store.reset(); // the next load reads the object again
    await idle();
    r.proxy.blackhole();
    r.proxy.heal();
    let value: string | undefined;
    const ms = await timed(async () => {
      value = await r.store.load("k1");
    });
    assert.equal(value, "v1");
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    inTime(ms);
    t.diagnostic(`dead keep-alive connection → read retried after ${ms.toFixed(0)} ms`);
  });

  test("an answer swallowed by a partition mid-request ends at the deadline; the retry finds the write ours", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    // The request has fully arrived; the answer goes out on a connection that just went silent.
    r.emulator.inject(
      r.writes,
      faults.before(() => {
        r.proxy.blackhole();
        r.proxy.heal();
      }),
    );
    const ms = await timed(() => r.store.commit("k2", "v2"));
    assert.equal(r.stored(), '{"k1":"v1","k2":"v2"}');
    assert.equal(r.emulator.count(r.writes), 3, "k1, the swallowed k2, and its retry (412, verified ours)");
    inTime(ms);
    t.diagnostic(`answer lost in a silent partition → write confirmed after ${ms.toFixed(0)} ms`);
  });

  test("a blackhole that never heals ends in a transient error after the store's attempts, not a hang", async (t) => {
    const r = await rig(t);
    await r.store.commit("k1", "v1");
    r.proxy.blackhole();
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(r.store.commit("k2", "v2"));
    });
    assert.ok(caught instanceof Error, "the commit failed");
    assert.equal(r.backend.classify(caught), "transient", `classified transient: ${String(caught)}`);
    assert.equal(r.clock.sleeps.length, 3, "4 attempts");
    assert.ok(ms < 4 * short + 2000, `took ${ms.toFixed(0)} ms`);
    assert.equal(r.stored(), '{"k1":"v1"}');
    t.diagnostic(`4 silent attempts → failed after ${ms.toFixed(0)} ms`);
  });
}

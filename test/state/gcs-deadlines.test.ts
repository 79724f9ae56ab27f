// Every GCS request ends (#17): the shared dead-connection cases against the GCS emulator (where a
// timed-out request is abandoned, not aborted: see src/state/gcs-deadline.ts), and the deadline
// helper's own contract.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import { GcsTimeoutError, withGcsDeadline } from "../../src/state/gcs-deadline.ts";
import { GCS_REQUEST_TIMEOUT_MS, GcsBackend, GcsCheckpointStore } from "../../src/state/gcs-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { GcsEmulator, gcsRequests } from "../support/gcs-emulator.ts";
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { deadlineCases, type DeadlineRig } from "./helpers/deadline-cases.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;

async function rig(t: TestContext): Promise<DeadlineRig> {
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
  return {
    emulator,
    proxy,
    store,
    clock,
    backend: new GcsBackend(settings),
    writes: gcsRequests.upload(),
    closesTimedOutSockets: false,
    stored: () => emulator.getObject(BUCKET, OBJECT)?.bytes.toString(),
  };
}

describe("GCS store deadlines", { timeout: 15_000 }, () => {
  test("default: 30 s per request", () => {
    assert.equal(GCS_REQUEST_TIMEOUT_MS, 30_000);
  });

  deadlineCases(SHORT, rig);

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
});

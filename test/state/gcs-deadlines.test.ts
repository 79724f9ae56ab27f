// Every GCS request ends (#17): the shared dead-connection cases against the GCS emulator (where a
// timed-out request is abandoned, not aborted: see src/state/gcs-deadline.ts), and the deadline
// helper's own contract.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import { GcsTimeoutError, withGcsDeadline } from "../../src/state/gcs-deadline.ts";
import { GCS_REQUEST_TIMEOUT_MS, GcsBackend, GcsCheckpointStore } from "../../src/state/gcs-store.ts";
import { GcsEmulator, gcsRequests } from "../support/gcs-emulator.ts";
import { behindProxy, deadlineCases, type DeadlineRig } from "./helpers/deadline-cases.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;

async function rig(t: TestContext): Promise<DeadlineRig> {
  const emulator = new GcsEmulator({ buckets: [BUCKET] });
  const settings = (endpoint_url: string) => ({ bucket: BUCKET, object_name: OBJECT, endpoint_url });
  const r = await behindProxy(
    t,
    emulator,
    (url, clock) => new GcsCheckpointStore(settings(url), { clock, requestTimeoutMs: SHORT }),
  );
  return {
    ...r,
    emulator,
    backend: new GcsBackend(settings(r.proxy.url)),
    writes: gcsRequests.upload(),
    closesTimedOutSockets: false,
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

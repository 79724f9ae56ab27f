// Every S3 request ends (#17). The shared dead-connection cases run twice: with only the request
// deadline short, which proves throwOnRequestTimeout (without it the SDK merely logs a WARN and
// waits), and with only the socket-idle deadline short.
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
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { deadlineCases, type DeadlineRig } from "./helpers/deadline-cases.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;
const credentials = { accessKeyId: "test", secretAccessKey: "test" };

async function rig(t: TestContext, deadlines: S3Deadlines): Promise<DeadlineRig> {
  const emulator = new S3Emulator({ buckets: [BUCKET] });
  await emulator.start();
  const proxy = await TcpFaultProxy.start(emulator.url);
  const settings = { bucket: BUCKET, key: OBJECT, endpoint_url: proxy.url };
  const clock = new ManualClock();
  const store = new S3CheckpointStore(settings, { clock, clientConfig: { credentials }, deadlines });
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
    backend: new S3Backend(settings, { credentials }),
    writes: s3Requests.put(),
    closesTimedOutSockets: true,
    stored: () => emulator.getObject(BUCKET, OBJECT)?.bytes.toString(),
  };
}

describe("S3 store deadlines", { timeout: 15_000 }, () => {
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

  describe("with only the request deadline short (throwOnRequestTimeout)", () => {
    deadlineCases(SHORT, (t) => rig(t, { connectMs: 5_000, requestMs: SHORT, socketIdleMs: 60_000 }));
  });

  describe("with only the socket-idle deadline short", () => {
    deadlineCases(SHORT, (t) => rig(t, { connectMs: 5_000, requestMs: 60_000, socketIdleMs: SHORT }));
  });
});

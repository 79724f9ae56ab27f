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
import { S3Emulator, s3Requests } from "../support/s3-emulator.ts";
import { behindProxy, deadlineCases, type DeadlineRig } from "./helpers/deadline-cases.ts";
import { BUCKET, OBJECT } from "./helpers/object-store-harness.ts";

const SHORT = 300;
const credentials = { accessKeyId: "test", secretAccessKey: "test" };

async function rig(t: TestContext, deadlines: S3Deadlines): Promise<DeadlineRig> {
  const emulator = new S3Emulator({ buckets: [BUCKET] });
  const settings = (endpoint_url: string) => ({ bucket: BUCKET, key: OBJECT, endpoint_url });
  const r = await behindProxy(
    t,
    emulator,
    (url, clock) => new S3CheckpointStore(settings(url), { clock, clientConfig: { credentials }, deadlines }),
  );
  return {
    ...r,
    emulator,
    backend: new S3Backend(settings(r.proxy.url), { credentials }),
    writes: s3Requests.put(),
    closesTimedOutSockets: true,
  };
}

describe("S3 store deadlines", { timeout: 15_000 }, () => {
  test("defaults: every phase bounded, and the request deadline throws instead of warning", () => {
    const handler = s3ClientConfig({ bucket: "b", key: "k" }).requestHandler as Record<string, unknown>;
    // The agents (direct or through the environment's proxy) are test/net/proxy.test.ts's to check.
    const { httpAgent: _http, httpsAgent: _https, ...deadlines } = handler;
    assert.deepEqual(deadlines, {
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

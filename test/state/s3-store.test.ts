import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { StateMissingScopeError, StateStoreConflictError } from "../../src/state/errors.ts";
import { S3CheckpointStore, s3ClientConfig } from "../../src/state/s3-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { faults } from "../support/object-store-emulator.ts";
import { S3Emulator, s3Requests } from "../support/s3-emulator.ts";
import { BUCKET, OBJECT, s3Harness } from "./helpers/object-store-harness.ts";
import { objectStoreCases } from "./object-store-cases.ts";

describe("S3 store against the S3 emulator", () => {
  objectStoreCases(s3Harness);

  test("409 ConditionalRequestConflict is retried", async (t) => {
    const h = await s3Harness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    h.emulator.inject(h.writes, faults.conditionalConflict());
    await store.commit("k2", "v2");
    assert.equal(h.emulator.count(h.writes), 3);
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
  });

  test("a 409 on a retry whose write already landed is adopted after one verification read", async (t) => {
    const h = await s3Harness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    h.emulator.inject(h.writes, faults.appliedThenReset());
    h.emulator.inject(h.writes, faults.conditionalConflict());
    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
    assert.equal(h.emulator.count(h.writes), 3, "no third PUT: the read-back settled it");
    await store.commit("k3", "v3");
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2", k3: "v3" });
  });

  test("409 on every attempt becomes a conflict after 4 PUTs", async (t) => {
    const h = await s3Harness(t);
    const store = h.store();
    h.emulator.inject(h.writes, faults.conditionalConflict(), Infinity);
    await assert.rejects(store.commit("k1", "v1"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /409 ConditionalRequestConflict, 4 attempts/);
      return true;
    });
    assert.equal(h.emulator.count(h.writes), 4);
  });

  test("If-Match carries the ETag exactly as S3 returned it, quotes included", async (t) => {
    const h = await s3Harness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    const etag = h.storedToken()!;
    assert.match(etag, /^"[0-9a-f]{32}"$/);
    await store.commit("k2", "v2");
    assert.equal(h.emulator.requests.filter(h.writes).at(-1)!.headers["if-match"], etag);
  });

  test("a missing bucket is not retried and not mistaken for a missing object", async (t) => {
    const emulator = new S3Emulator({ buckets: [] });
    await emulator.start();
    t.after(() => emulator.close());
    const store = new S3CheckpointStore(
      { bucket: "nope", key: OBJECT, endpoint_url: emulator.url },
      { clock: new ManualClock(), clientConfig: { credentials: { accessKeyId: "a", secretAccessKey: "b" } } },
    );
    t.after(() => store.close());
    await assert.rejects(
      store.load("k"),
      (e: unknown) =>
        e instanceof StateMissingScopeError &&
        (e.cause as Error).name === "NoSuchBucket" &&
        /the bucket nope does not exist\. Create it \(`aws s3 mb s3:\/\/nope/.test(e.message),
    );
    assert.equal(emulator.requests.length, 1);
  });

  test("the SDK's default CRC32 request checksums work too (what AWS itself gets)", async (t) => {
    const emulator = new S3Emulator({ buckets: [BUCKET] });
    await emulator.start();
    t.after(() => emulator.close());
    const store = new S3CheckpointStore(
      { bucket: BUCKET, key: OBJECT, endpoint_url: emulator.url },
      {
        clock: new ManualClock(),
        clientConfig: {
          credentials: { accessKeyId: "a", secretAccessKey: "b" },
          requestChecksumCalculation: "WHEN_SUPPORTED",
        },
      },
    );
    t.after(() => store.close());
    await store.commit("k1", "v1");
    const put = emulator.requests.find(s3Requests.put())!;
    assert.ok(put.headers["x-amz-checksum-crc32"], "the SDK sent a checksum");
    assert.equal(emulator.getObject(BUCKET, OBJECT)!.bytes.toString(), '{"k1":"v1"}');
  });

  test("client config: SDK retries off, path-style for custom endpoints, region defaults", () => {
    const custom = s3ClientConfig({ bucket: "b", key: "k", endpoint_url: "http://minio:9000" });
    assert.equal(custom.maxAttempts, 1);
    assert.equal(custom.forcePathStyle, true);
    assert.equal(custom.region, "us-east-1");
    const aws = s3ClientConfig({ bucket: "b", key: "k", region: "eu-west-1" });
    assert.equal(aws.maxAttempts, 1);
    assert.equal(aws.forcePathStyle, false);
    assert.equal(aws.region, "eu-west-1");
    assert.equal(
      s3ClientConfig({ bucket: "b", key: "k", endpoint_url: "http://x", force_path_style: false })
        .forcePathStyle,
      false,
    );
  });
});

// The emulators themselves, driven by the real SDKs: the request shapes the stores do not use today
// (resumable and media uploads, HEAD, DELETE, metadata GET) must still behave like the real services.
import assert from "node:assert/strict";
import { describe, test, type TestContext } from "node:test";
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { IdempotencyStrategy, Storage } from "@google-cloud/storage";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { faults, type ObjectStoreEmulatorServer } from "../support/object-store-emulator.ts";
import { S3Emulator, s3Requests } from "../support/s3-emulator.ts";

async function started<E extends ObjectStoreEmulatorServer>(t: TestContext, e: E): Promise<E> {
  await e.start();
  t.after(() => e.close());
  return e;
}

describe("GCS emulator", () => {
  test("resumable and multipart uploads honour ifGenerationMatch; metadata GET reports the generation", async (t) => {
    const em = await started(t, new GcsEmulator({ buckets: ["b"] }));
    const storage = new Storage({
      apiEndpoint: em.url,
      retryOptions: { autoRetry: false, idempotencyStrategy: IdempotencyStrategy.RetryNever },
    });
    const file = storage.bucket("b").file("dir/o.json");
    await file.save("one", {
      resumable: true,
      validation: false,
      preconditionOpts: { ifGenerationMatch: 0 },
    });
    assert.ok(em.log.some((l) => l.includes("uploadType=resumable")));
    const [meta] = await file.getMetadata();
    assert.equal(String(meta.generation), em.getObject("b", "dir/o.json")!.generation);
    await assert.rejects(
      storage
        .bucket("b")
        .file("dir/o.json")
        .save("two", { resumable: false, validation: false, preconditionOpts: { ifGenerationMatch: 0 } }),
      (e: unknown) => (e as { code?: number }).code === 412,
    );
    const [bytes] = await storage.bucket("b").file("dir/o.json").download();
    assert.equal(bytes.toString(), "one", "the download validated the emulator's crc32c");
    await storage.bucket("b").file("dir/o.json").delete();
    assert.equal(em.getObject("b", "dir/o.json"), undefined);
  });

  test("media uploads honour ifGenerationMatch", async (t) => {
    const em = await started(t, new GcsEmulator({ buckets: ["b"] }));
    const url = `${em.url}/upload/storage/v1/b/b/o?uploadType=media&name=m.json&ifGenerationMatch=0`;
    const first = await fetch(url, {
      method: "POST",
      body: "{}",
      headers: { "content-type": "application/json" },
    });
    assert.equal(first.status, 200);
    const resource = (await first.json()) as { generation: string };
    assert.equal(resource.generation, em.getObject("b", "m.json")!.generation);
    const second = await fetch(url, { method: "POST", body: "{}" });
    assert.equal(second.status, 412);
    assert.equal(
      ((await second.json()) as { error: { errors: { reason: string }[] } }).error.errors[0]!.reason,
      "conditionNotMet",
    );
  });
});

describe("S3 emulator", () => {
  test("HEAD, DELETE, conditional PUT and per-request recording; faults are one-shot or persistent", async (t) => {
    const em = await started(t, new S3Emulator({ buckets: ["b"] }));
    const s3 = new S3Client({
      endpoint: em.url,
      region: "us-east-1",
      forcePathStyle: true,
      maxAttempts: 1,
      credentials: { accessKeyId: "a", secretAccessKey: "b" },
    });
    t.after(() => {
      s3.destroy();
    });
    await s3.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "x", IfNoneMatch: "*" }));
    const head = await s3.send(new HeadObjectCommand({ Bucket: "b", Key: "k" }));
    assert.equal(head.ETag, em.getObject("b", "k")!.etag);
    assert.equal(head.ContentLength, 1);
    await assert.rejects(
      s3.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "y", IfMatch: '"nope"' })),
      {
        name: "PreconditionFailed",
      },
    );
    assert.equal(em.requests.at(-1)!.body.toString(), "y");

    em.inject(s3Requests.put(), faults.slowDown(), 2);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(s3.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "z" })), {
        name: "SlowDown",
      });
    }
    await s3.send(new PutObjectCommand({ Bucket: "b", Key: "k", Body: "z" }));
    assert.equal(em.getObject("b", "k")!.bytes.toString(), "z");

    await s3.send(new DeleteObjectCommand({ Bucket: "b", Key: "k" }));
    await assert.rejects(s3.send(new HeadObjectCommand({ Bucket: "b", Key: "k" })), { name: "NotFound" });
    assert.deepEqual(
      em.writes.map((w) => w.bytes.toString()),
      ["x", "z"],
    );
  });
});

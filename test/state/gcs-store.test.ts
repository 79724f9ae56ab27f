import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { IdempotencyStrategy } from "@google-cloud/storage";
import { GcsCheckpointStore, gcsStorageOptions } from "../../src/state/gcs-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { BUCKET, OBJECT, gcsHarness } from "./helpers/object-store-harness.ts";
import { objectStoreCases } from "./object-store-cases.ts";

describe("GCS store against the GCS emulator", () => {
  objectStoreCases(gcsHarness);

  test("a load is one media GET: body and generation come from the same response", async (t) => {
    const h = await gcsHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v1" }));
    // A writer landing just before the download: with a separate metadata call the body would be newer
    // than the cached generation and the first commit would fail with a spurious conflict.
    h.emulator.inject(h.reads, h.otherWriterFirst({ k1: "newer" }));
    const store = h.store();
    assert.equal(await store.load("k1"), "newer");
    assert.equal(h.emulator.requests.length, 1, "no separate metadata request");
    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "newer", k2: "v2" });
  });

  test("uploads carry ifGenerationMatch as the generation string and an MD5 for the server to check", async (t) => {
    const h = await gcsHarness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    const generation = h.storedToken()!;
    await store.commit("k2", "v2");
    const last = h.emulator.requests.filter(h.writes).at(-1)!;
    assert.equal(last.query.get("ifGenerationMatch"), generation);
    assert.equal(last.query.get("uploadType"), "multipart");
    assert.match(last.body.toString("utf8"), /"md5Hash":"[A-Za-z0-9+/=]+"/);
  });

  test("STORAGE_EMULATOR_HOST is honoured and no credentials are needed or sent", async (t) => {
    const emulator = new GcsEmulator({ buckets: [BUCKET] });
    await emulator.start();
    t.after(() => emulator.close());
    const saved = process.env.STORAGE_EMULATOR_HOST;
    process.env.STORAGE_EMULATOR_HOST = emulator.url;
    t.after(() => {
      if (saved === undefined) delete process.env.STORAGE_EMULATOR_HOST;
      else process.env.STORAGE_EMULATOR_HOST = saved;
    });
    const store = new GcsCheckpointStore(
      { bucket: BUCKET, object_name: OBJECT },
      { clock: new ManualClock() },
    );
    t.after(() => store.close());
    await store.commit("k1", "v1");
    store.reset();
    assert.equal(await store.load("k1"), "v1");
    assert.ok(emulator.requests.length >= 3);
    assert.ok(emulator.requests.every((r) => r.headers.authorization === undefined));
  });

  test("client options: library retries off, emulator endpoints unauthenticated unless a key file is named", () => {
    const opts = gcsStorageOptions({ bucket: "b", object_name: "o", endpoint_url: "http://127.0.0.1:1" });
    assert.deepEqual(opts.retryOptions, {
      autoRetry: false,
      maxRetries: 0,
      idempotencyStrategy: IdempotencyStrategy.RetryNever,
    });
    assert.equal(opts.apiEndpoint, "http://127.0.0.1:1");
    assert.equal(opts.useAuthWithCustomEndpoint, false);
    const keyed = gcsStorageOptions({
      bucket: "b",
      object_name: "o",
      endpoint_url: "http://x",
      service_file: "/k.json",
    });
    assert.equal(keyed.useAuthWithCustomEndpoint, true);
    // eslint-disable-next-line @typescript-eslint/no-deprecated -- asserting what we pass, not using it
    assert.equal(keyed.keyFilename, "/k.json");
    assert.equal(gcsStorageOptions({ bucket: "b", object_name: "o" }).apiEndpoint, undefined);
  });
});

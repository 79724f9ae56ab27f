// The Azure Blob store against Microsoft's Azurite (started from node_modules, in memory, on loopback)
// behind the fault proxy: the same seed scenarios as S3 and GCS, plus what only Azure does.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { BlobServiceClient } from "@azure/storage-blob";
import { DefaultAzureCredential } from "@azure/identity";
import { ConfigError } from "../../src/errors.ts";
import { AzureBackend } from "../../src/state/azure/backend.ts";
import { azureBlobClient, azurePipelineOptions } from "../../src/state/azure/client.ts";
import { AzureCheckpointStore } from "../../src/state/azure/store.ts";
import { buildStore } from "../../src/state/build.ts";
import { StateStoreConflictError } from "../../src/state/errors.ts";
import type { AzureStateSettings } from "../../src/state/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { AZURITE_ACCOUNT, Azurite, azuriteConnectionString } from "../support/azurite.ts";
import { faults } from "../support/object-store-emulator.ts";
import { azureHarness } from "./helpers/azure-harness.ts";
import { OBJECT } from "./helpers/object-store-harness.ts";
import { objectStoreCases } from "./object-store-cases.ts";

let azurite: Azurite | undefined;
const running = (): Azurite => {
  assert.ok(azurite, "Azurite started in before()");
  return azurite;
};
const harness = azureHarness(running);

const viaAccountUrl: AzureStateSettings = {
  account_url: "https://acme.blob.core.windows.net",
  container: "sf2loki",
  blob_name: OBJECT,
  credential: "default",
};

describe("Azure Blob store against Azurite", () => {
  before(async () => {
    azurite = await Azurite.start();
  });
  after(() => azurite?.stop());

  objectStoreCases(harness);

  test("If-None-Match: * over a blob created since our read is 409 BlobAlreadyExists: a race, no GET", async (t) => {
    const h = await harness(t);
    const store = h.store();
    assert.equal(await store.load("k1"), undefined);
    h.thirdPartyWrite(JSON.stringify({ k1: "theirs" }));
    const mark = h.emulator.requests.length;

    await assert.rejects(store.commit("k1", "mine"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /compare-and-swap race/);
      return true;
    });
    const after = h.emulator.requests.slice(mark);
    assert.deepEqual(
      after.map((r) => [r.method, h.preconditionOf(r)]),
      [["PUT", "create"]],
    );
    assert.deepEqual(h.stored(), { k1: "theirs" });
  });

  test("a blob lease held by another client (412 LeaseIdMissing) is retried, then named in the conflict", async (t) => {
    const h = await harness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    const container = /^azure:\/\/[^/]+\/([^/]+)\//.exec(h.location)?.[1] ?? "";
    const leased = BlobServiceClient.fromConnectionString(azuriteConnectionString(running().url))
      .getContainerClient(container)
      .getBlobClient(OBJECT)
      .getBlobLeaseClient();
    await leased.acquireLease(15);
    const mark = h.emulator.requests.length;

    await assert.rejects(store.commit("k2", "v2"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /blob lease held by another client, 4 attempts/);
      assert.match(e.message, new RegExp(h.location.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&")));
      return true;
    });
    assert.equal(h.emulator.requests.slice(mark).filter(h.writes).length, 4);

    await leased.releaseLease();
    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
  });

  test("a 409 on a PUT (a colliding operation) is retried", async (t) => {
    const h = await harness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    h.emulator.inject(h.writes, { kind: "error", status: 409, code: "OperationNotAllowedInCurrentState" });
    await store.commit("k2", "v2");
    assert.equal(h.emulator.count(h.writes), 3);
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
  });

  test("a missing container is an error naming it, never an empty document", async (t) => {
    const h = await harness(t);
    const store = new AzureCheckpointStore(
      {
        container: "no-such-container",
        blob_name: OBJECT,
        credential: "connection_string",
        connection_string: azuriteConnectionString(h.emulator.url),
      },
      { clock: new ManualClock() },
    );
    t.after(() => store.close());
    await assert.rejects(store.load("k1"), /container does not exist/);
    assert.equal(h.emulator.requests.length, 1, "not retried");
  });

  test("one load is one GET, and the SDK never resumes a cut body by itself", async (t) => {
    const h = await harness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v".repeat(4096) }));
    h.emulator.inject(h.reads, faults.cutBody());
    assert.equal(await h.store().load("k1"), "v".repeat(4096));
    // A ranged resume would show up as a GET with an x-ms-range header.
    assert.deepEqual(
      h.emulator.requests.map((r) => [r.method, r.headers["x-ms-range"] ?? r.headers.range]),
      [
        ["GET", undefined],
        ["GET", undefined],
      ],
    );
  });

  test("measures: ms per commit on loopback, straight to Azurite and through the proxy", async (t) => {
    const h = await harness(t);
    const container = /^azure:\/\/[^/]+\/([^/]+)\//.exec(h.location)?.[1] ?? "";
    const direct = new AzureCheckpointStore(
      {
        container,
        blob_name: "direct.json",
        credential: "connection_string",
        connection_string: azuriteConnectionString(running().url),
      },
      { clock: h.clock },
    );
    t.after(() => direct.close());
    const perCommit = async (store: { commit(k: string, v: string): Promise<void> }) => {
      await store.commit("warm", "up");
      const n = 200;
      const started = performance.now();
      for (let i = 0; i < n; i++) await store.commit(`k${i % 10}`, String(i));
      return (performance.now() - started) / n;
    };
    const straight = await perCommit(direct);
    const proxied = await perCommit(h.store());
    t.diagnostic(
      `azure commit (200 commits, one conditional PUT each): ${straight.toFixed(2)} ms straight to Azurite, ` +
        `${proxied.toFixed(2)} ms through the fault proxy`,
    );
    assert.equal(h.emulator.count(h.writes), 201, "one conditional PUT per commit, no read");
  });
});

describe("Azure client wiring (offline)", () => {
  test("SDK retries are off and every attempt is bounded", () => {
    assert.deepEqual(azurePipelineOptions().retryOptions, { maxTries: 1, tryTimeoutInMs: 30_000 });
  });

  test("the location names account, container and blob, for both credentials", () => {
    assert.equal(new AzureBackend(viaAccountUrl).hints.location, `azure://acme/sf2loki/${OBJECT}`);
    const local = new AzureBackend({
      container: "c1",
      blob_name: "x/y.json",
      credential: "connection_string",
      connection_string: azuriteConnectionString("http://127.0.0.1:1"),
    });
    assert.equal(local.hints.location, `azure://${AZURITE_ACCOUNT}/c1/x/y.json`);
    assert.match(local.hints.removeCommand, /^az storage blob delete --account-name devstoreaccount1 /);
    assert.match(new AzureBackend(viaAccountUrl).hints.removeCommand, /--auth-mode login$/);
  });

  test("credential default uses the DefaultAzureCredential chain against account_url", async () => {
    const client = await azureBlobClient(viaAccountUrl, "state.azure");
    assert.ok(client.credential instanceof DefaultAzureCredential);
    assert.equal(client.url, `https://acme.blob.core.windows.net/sf2loki/${OBJECT}`);
  });

  test("a missing or unusable credential is a config error naming the key, before any request", () => {
    const code = (settings: AzureStateSettings) => {
      try {
        buildStore({
          store: "azure",
          file: { path: "/unused" },
          s3: { bucket: "", key: "k" },
          gcs: { bucket: "", object_name: "o" },
          azure: settings,
        });
      } catch (err) {
        assert.ok(err instanceof ConfigError);
        return err.message;
      }
      return "built";
    };
    assert.match(code({ ...viaAccountUrl, account_url: null }), /state\.azure\.account_url is empty/);
    assert.match(
      code({ ...viaAccountUrl, credential: "connection_string", account_url: null }),
      /state\.azure\.connection_string_file is set/,
    );
    assert.match(
      code({
        ...viaAccountUrl,
        credential: "connection_string",
        connection_string: "not a connection string",
      }),
      /connection string cannot be used/,
    );
    assert.match(code({ ...viaAccountUrl, container: " " }), /state\.azure\.container is empty/);
    assert.equal(code(viaAccountUrl), "built", "offline: no credential is fetched to build the store");
  });
});

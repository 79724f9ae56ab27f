// The object-store harness for Azure Blob Storage: the real @azure/storage-blob client, through the
// fault proxy, against one Azurite per test file; each harness gets a container of its own, so the
// shared cases run unchanged against S3, GCS and Azure.
import { randomBytes } from "node:crypto";
import type { TestContext } from "node:test";
import { AzureCheckpointStore } from "../../../src/state/azure/store.ts";
import type { AzureStateSettings } from "../../../src/state/settings.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { AZURITE_ACCOUNT, type Azurite } from "../../support/azurite.ts";
import { AzuriteProxy, blobOf } from "../../support/azurite-proxy.ts";
import { faults, type RecordedRequest } from "../../support/object-store-emulator.ts";
import { OBJECT, type HarnessFactory } from "./object-store-harness.ts";

/** A container name Azure accepts (3-63 lowercase letters, digits, hyphens), unique per harness. */
export function freshContainer(prefix: string): string {
  return `${prefix}-${randomBytes(6).toString("hex")}`;
}

/** A started proxy in front of `azurite`, closed at the end of `t`. */
export async function proxyFor(t: TestContext, azurite: Azurite): Promise<AzuriteProxy> {
  const proxy = new AzuriteProxy(azurite);
  await proxy.start();
  t.after(() => proxy.close());
  return proxy;
}

const isBlob = (method: string, blob: string) => (req: RecordedRequest) =>
  req.method === method && blobOf(req)?.blob === blob;

/** `azurite` is read when a test starts: the file starts one Azurite in `before()`. */
export function azureHarness(azurite: () => Azurite): HarnessFactory {
  return async (t) => {
    const proxy = await proxyFor(t, azurite());
    const container = freshContainer("state");
    proxy.createContainer(container);
    const clock = new ManualClock();
    const settings: AzureStateSettings = {
      container,
      blob_name: OBJECT,
      credential: "connection_string",
      connection_string: proxy.connectionString,
    };
    const stored = () => proxy.getObject(container, OBJECT);
    const write = (bytes: Buffer | string) => void proxy.putObject(container, OBJECT, bytes);
    return {
      backend: "azure",
      emulator: proxy,
      location: `azure://${AZURITE_ACCOUNT}/${container}/${OBJECT}`,
      clock,
      writes: isBlob("PUT", OBJECT),
      reads: isBlob("GET", OBJECT),
      store: (opts = {}) => {
        const store = new AzureCheckpointStore(settings, { clock, ...opts });
        t.after(() => store.close());
        return store;
      },
      stored: () => {
        const bytes = stored()?.bytes;
        return bytes && (JSON.parse(bytes.toString("utf8")) as Record<string, string>);
      },
      storedToken: () => stored()?.etag,
      thirdPartyWrite: write,
      otherWriterFirst: (doc) =>
        faults.before(() => {
          write(JSON.stringify(doc));
        }),
      otherDeleterFirst: () =>
        faults.before(() => {
          proxy.deleteObject(container, OBJECT);
        }),
      preconditionOf: (req) => (req.headers["if-none-match"] === "*" ? "create" : req.headers["if-match"]),
    };
  };
}

// Building the daemon loads only what its config uses: the S3, GCS and Azure SDKs (34-41 MiB of RSS
// each), gRPC and Avro (Pub/Sub) and the OTLP exporter load on first use, not with the wiring; so does
// jose (JWT auth only); csv-parse is not loaded (the ELF source has its own parser), and undici's index
// (fetch, WebSocket, mocks) never loads at all (src/util/http-dispatchers.ts). Each case builds the app in a fresh Node process
// that records every bare specifier its module graph resolves.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { promisify } from "node:util";

const run = promisify(execFile);
const ROOT = new URL("../../", import.meta.url);

const HEAVY = [
  "@aws-sdk/client-s3",
  "@google-cloud/storage",
  "@azure/storage-blob",
  "@azure/identity",
  "@kubernetes/client-node",
  "@grpc/grpc-js",
  "@grpc/proto-loader",
  "avsc",
  "@opentelemetry/exporter-metrics-otlp-proto",
];

/** Every bare specifier (`undici`, `undici/lib/api/index.js`, ...) resolved while building an app from `tree`. */
async function specifiersResolvedBuilding(tree: unknown): Promise<string[]> {
  const script = `
    import { registerHooks } from "node:module";
    const seen = new Set();
    registerHooks({
      resolve(specifier, context, next) {
        if (!specifier.startsWith(".") && !specifier.startsWith("node:") && !specifier.startsWith("file:")) {
          seen.add(specifier);
        }
        return next(specifier, context);
      },
    });
    const { createApp } = await import("./src/daemon/app.ts");
    const { validateConfig } = await import("./src/config/load.ts");
    createApp(validateConfig(${JSON.stringify(tree)}), { noHealthServer: true });
    process.stdout.write(JSON.stringify([...seen]));
  `;
  const { stdout } = await run(process.execPath, ["--input-type=module", "-e", script], {
    cwd: ROOT,
    env: { ...process.env, NODE_OPTIONS: "" },
  });
  return JSON.parse(stdout) as string[];
}

function packageOf(specifier: string): string {
  const parts = specifier.split("/");
  return specifier.startsWith("@") ? parts.slice(0, 2).join("/") : parts[0]!;
}

/** The packages (of `watch`) resolved while building an app from `tree` and starting nothing. */
async function packagesLoadedBuilding(tree: unknown, watch: readonly string[] = HEAVY): Promise<string[]> {
  const seen = new Set((await specifiersResolvedBuilding(tree)).map(packageOf));
  return watch.filter((p) => seen.has(p));
}

const salesforce = {
  auth_mode: "client_credentials",
  login_url: "https://example.my.salesforce.com",
  client_id: "id",
  client_secret: "secret",
};
const base = {
  salesforce,
  sources: { eventlogfile: { enabled: true, event_types: ["API"] } },
  sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
};

test("a file-store ELF daemon builds without any cloud SDK, gRPC or the OTLP exporter", async () => {
  const loaded = await packagesLoadedBuilding({ ...base, state: { file: { path: "/tmp/unused.json" } } });
  assert.deepEqual(loaded, []);
});

test("object stores, object leases, Pub/Sub topics and OTLP push build offline without their SDKs", async () => {
  const loaded = await packagesLoadedBuilding({
    ...base,
    sources: { ...base.sources, pubsub: { enabled: true, topics: ["/event/LoginEventStream"] } },
    state: { store: "s3", s3: { bucket: "b", key: "k", endpoint_url: "http://127.0.0.1:9" } },
    coordinate: {
      type: "azure_lease",
      azure_lease: {
        credential: "connection_string",
        connection_string:
          "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;" +
          "BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
        container: "c",
        blob_name: "leader.lease",
      },
    },
    service: { telemetry: { enabled: true, auth: "none", endpoint: "http://127.0.0.1:9/v1/metrics" } },
  });
  assert.deepEqual(loaded, []);
});

test("a sharded daemon (coordinate.sharding on an S3 lease) builds offline without its SDK", async () => {
  const org = (name: string) => ({ name, salesforce, sources: base.sources });
  const loaded = await packagesLoadedBuilding({
    orgs: [org("prod"), org("emea")],
    sink: base.sink,
    state: { store: "s3", s3: { bucket: "b", key: "k", endpoint_url: "http://127.0.0.1:9" } },
    coordinate: {
      type: "s3_lease",
      s3_lease: { bucket: "b", endpoint_url: "http://127.0.0.1:9" },
      sharding: { enabled: true },
    },
  });
  assert.deepEqual(loaded, []);
});

test("a Pub/Sub daemon on client credentials builds without jose, csv-parse or undici's index", async () => {
  const specifiers = await specifiersResolvedBuilding({
    ...base,
    sources: { pubsub: { enabled: true, topics: ["/event/LoginEventStream"] } },
    state: { file: { path: "/tmp/unused.json" } },
  });
  const packages = new Set(specifiers.map(packageOf));
  assert.ok(packages.has("undici"), "the Loki sink's Pool comes from undici");
  assert.deepEqual(
    specifiers.filter((s) => s === "undici" || packageOf(s) === "jose" || packageOf(s) === "csv-parse"),
    [],
  );
});

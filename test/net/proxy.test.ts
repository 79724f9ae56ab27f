// Every outbound HTTP client behind a real forwarding proxy on loopback (test/support/forward-proxy.ts:
// CONNECT for https, absolute-URI forwarding for http) that records what passed through it. The
// environment is set the way a corporate one often is, with both spellings and disagreeing ones:
// the lower-case https_proxy / http_proxy name the counting proxy and the upper-case ones a decoy, so
// a client that reads the variables itself (upper case first, as the Azure and GCS libraries do)
// shows up at the decoy, and one that ignores them shows up nowhere. no_proxy / NO_PROXY hold
// `localhost`: each client reaches the same server once as 127.0.0.1 (through the counting proxy) and
// once as localhost (never through any proxy).
import assert from "node:assert/strict";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { Agent as HttpsAgent, get as httpsGet } from "node:https";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { readFileSync } from "node:fs";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { kubeConfigFor, leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { LogEntry, msToNs } from "../../src/model.ts";
import { LazyOtlpExporter } from "../../src/obs/lazy-otlp.ts";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import { salesforceDispatcher } from "../../src/salesforce/connections.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import { startLokiReceiver, type LokiReceiver } from "../../src/sim/loki.ts";
import { simSalesforceSettings, startSimOrg } from "../../src/sim/salesforce/index.ts";
import { sfDatetime, simId } from "../../src/sim/salesforce-rest/index.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import { createOtlpSink } from "../../src/sinks/otlp/sink.ts";
import { AzureCheckpointStore } from "../../src/state/azure/store.ts";
import { azureBlobClient, azureContainerClient } from "../../src/state/azure/client.ts";
import { GcsCheckpointStore } from "../../src/state/gcs-store.ts";
import { S3CheckpointStore } from "../../src/state/s3-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { nodeAgentOptions } from "../../src/util/node-agents.ts";
import { Azurite, azuriteConnectionString } from "../support/azurite.ts";
import { ForwardProxy } from "../support/forward-proxy.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { setProxyVariables } from "../support/proxy-env.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { startOtlpReceiver } from "../support/otlp-receiver.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { tempDir } from "../support/tmp.ts";
import { TLS_FILES, startTlsFront } from "../support/tls-front.ts";

let restoreEnv: () => void = () => undefined;
let counting: ForwardProxy;
let decoy: ForwardProxy;
let azurite: Azurite;

before(async () => {
  // Azurite is a child process: started before the variables are set, it inherits none of them.
  azurite = await Azurite.start();
  counting = await ForwardProxy.start();
  decoy = await ForwardProxy.start();
  // With credentials, which every client must turn into the proxy's Proxy-Authorization header.
  const withCredentials = counting.url.replace("//", "//svc:p%40ss@");
  restoreEnv = setProxyVariables({
    http_proxy: withCredentials,
    https_proxy: withCredentials,
    HTTP_PROXY: decoy.url,
    HTTPS_PROXY: decoy.url,
    no_proxy: "localhost",
    NO_PROXY: "localhost",
  });
});

after(async () => {
  restoreEnv();
  await Promise.all([counting.close(), decoy.close(), azurite.stop()]);
});

const local = (url: string): string => url.replace("127.0.0.1", "localhost");

/** Paths the counting proxy forwarded to `origin`; a tunnel shows as `CONNECT`. */
function through(origin: string): string[] {
  return counting.to(origin).map((r) => (r.method === "CONNECT" ? "CONNECT" : r.path));
}

const PROXY_AUTHORIZATION = `Basic ${Buffer.from("svc:p@ss").toString("base64")}`;

/**
 * Nothing reached the decoy, no request for a NO_PROXY host reached any proxy, and every request the
 * counting proxy saw carried the credentials of the proxy URL.
 */
function noStrayTraffic(): void {
  assert.deepEqual(decoy.requests, [], "a client read the upper-case variables itself");
  assert.deepEqual(counting.toHost("localhost"), [], "a NO_PROXY host went through the proxy");
  const anonymous = counting.requests.filter((r) => r.proxyAuthorization !== PROXY_AUTHORIZATION);
  assert.deepEqual(anonymous, [], "a request reached the proxy without its credentials");
}

const T0_MS = Date.UTC(2026, 0, 1);

function entries(n: number, from = 0): LogEntry[] {
  return Array.from(
    { length: n },
    (_, i) =>
      new LogEntry({
        timestampNs: msToNs(T0_MS) + BigInt(from + i),
        labels: { source: "pubsub", event_type: "LoginEventStream" },
        line: `{"n":${from + i}}`,
        checkpoint: { key: "pubsub:/event/LoginEventStream", value: String(from + i) },
      }),
  );
}

async function lokiReceiver(t: TestContext): Promise<LokiReceiver> {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  return receiver;
}

function lokiSettings(url: string) {
  return {
    url,
    encoding: "protobuf" as const,
    compression: "snappy" as const,
    labels: {},
    batch: { max_line_bytes: 262_144 },
    reconcile: { enabled: true },
  };
}

test("Salesforce: the token, a SOQL query and an EventLogFile download go through the proxy", async (t) => {
  const file = simId("0AT", 1);
  const sim = await startSimOrg({
    clientSecret: "s",
    rest: {
      eventLogFiles: [
        {
          Id: file,
          EventType: "API",
          Interval: "Hourly",
          LogDate: sfDatetime(0),
          CreatedDate: sfDatetime(0),
          Sequence: 1,
          rows: 5,
        },
      ],
    },
  });
  t.after(() => sim.stop());
  const http = salesforceDispatcher();
  const auth = new TokenProvider({ settings: simSalesforceSettings(sim, "s"), dispatcher: http });
  const rest = new RestClient({ tokens: auth, apiVersion: "60.0", dispatcher: http, closesDispatcher: true });
  t.after(() => rest.close());

  const listed = await rest.queryAll("SELECT Id, EventType FROM EventLogFile");
  assert.deepEqual(
    listed.map((r) => r.Id),
    [file],
  );
  const download = await rest.download(rest.path(`sobjects/EventLogFile/${file}/LogFile`));
  for await (const _ of download) {
    // drain
  }
  assert.ok(download.bytes > 0);
  const paths = through(sim.loginUrl);
  assert.ok(paths.includes("/services/oauth2/token"), paths.join(" "));
  assert.ok(paths.includes("/services/data/v60.0/query"), paths.join(" "));
  assert.ok(paths.includes(`/services/data/v60.0/sobjects/EventLogFile/${file}/LogFile`), paths.join(" "));

  // The same org's login host as localhost: the token comes straight from it.
  const direct = new TokenProvider({
    settings: simSalesforceSettings(sim, "s", { login_url: local(sim.loginUrl) }),
    dispatcher: http,
  });
  assert.ok((await direct.token()).accessToken);

  assert.equal(sim.stats().mints, 2);
  noStrayTraffic();
});

test("Loki: the push and a reconcile lookup go through the proxy, over https by CONNECT with sink.loki.tls", async (t) => {
  const receiver = await lokiReceiver(t);
  const clock = new ManualClock();
  const sink = createLokiSink(lokiSettings(receiver.pushUrl), { clock });
  t.after(() => sink.close());
  await sink.push(entries(3));
  const found = await sink.lookup!.stored(entries(3), AbortSignal.timeout(10_000));
  assert.equal(found.stored.size, 3);
  assert.deepEqual(through(receiver.url), ["/loki/api/v1/push", "/loki/api/v1/query_range"]);

  const front = await startTlsFront(receiver.url);
  t.after(() => front.close());
  const tls = createLokiSink(
    {
      ...lokiSettings(`${front.url}/loki/api/v1/push`),
      tls: { ca_file: TLS_FILES.ca, cert_file: null, key_file: null },
    },
    { clock },
  );
  t.after(() => tls.close());
  await tls.push(entries(2, 3));
  assert.deepEqual(through(front.url), ["CONNECT"]);

  const direct = createLokiSink(lokiSettings(local(receiver.pushUrl)), { clock });
  t.after(() => direct.close());
  await direct.push(entries(2, 5));
  await direct.lookup!.stored(entries(2, 5), AbortSignal.timeout(10_000));
  assert.equal(receiver.counts.accepted, 7);
  noStrayTraffic();
});

test("OTLP: the logs sink's export and the metric exporter's go through the proxy", async (t) => {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.stop());
  const otlp = (url: string) =>
    createOtlpSink(
      { url, headers: {}, compression: "gzip", service_name: "sf2loki", batch: { max_line_bytes: 262_144 } },
      { clock: new ManualClock() },
    );
  const sink = otlp(receiver.url);
  t.after(() => sink.close());
  await sink.push(entries(3));
  assert.deepEqual(through(receiver.url), ["/v1/logs"]);

  const metricsServer = await plainServer(t);
  const exported = async (url: string): Promise<number> => {
    const exporter = new LazyOtlpExporter(url, {});
    t.after(() => exporter.shutdown());
    return new Promise((resolve) => {
      exporter.export({ resource: resourceFromAttributes({}), scopeMetrics: [] }, (r) => {
        resolve(r.code);
      });
    });
  };
  assert.equal(await exported(`${metricsServer}/v1/metrics`), 0);
  assert.deepEqual(through(metricsServer), ["/v1/metrics"]);

  const direct = otlp(local(receiver.url));
  t.after(() => direct.close());
  await direct.push(entries(2, 3));
  assert.equal(await exported(`${local(metricsServer)}/v1/metrics`), 0);
  assert.equal(receiver.exports.length, 2);
  noStrayTraffic();
});

/** An HTTP server that answers every request 200 with an empty body; its origin. */
async function plainServer(t: TestContext): Promise<string> {
  const server: Server = createServer((req, res) => {
    req.resume();
    req.on("end", () => res.writeHead(200, { "content-type": "application/x-protobuf" }).end());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

test("node:http clients (S3, Azure, OTLP metrics) tunnel https through the proxy by CONNECT", async (t) => {
  const front = await startTlsFront(await plainServer(t));
  t.after(() => front.close());
  const agent = new HttpsAgent({ ...nodeAgentOptions(front.url), ca: readFileSync(TLS_FILES.ca) });
  t.after(() => {
    agent.destroy();
  });
  const status = await new Promise<number | undefined>((resolve, reject) => {
    httpsGet(`${front.url}/probe`, { agent }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on("error", reject);
  });
  assert.equal(status, 200);
  assert.deepEqual(through(front.url), ["CONNECT"]);
  noStrayTraffic();
});

test("S3: the checkpoint store's writes and reads go through the proxy", async (t) => {
  const emulator = new S3Emulator({ buckets: ["b"] });
  await emulator.start();
  t.after(() => emulator.close());
  const store = (endpoint: string) => {
    const s = new S3CheckpointStore(
      { bucket: "b", key: "state.json", endpoint_url: endpoint },
      { clock: new ManualClock(), clientConfig: { credentials: { accessKeyId: "a", secretAccessKey: "b" } } },
    );
    t.after(() => s.close());
    return s;
  };
  await store(emulator.url).commit("k", "v1");
  assert.deepEqual(
    through(emulator.url).map((p) => p.split("?")[0]),
    ["/b/state.json", "/b/state.json"],
  );
  assert.equal(await store(local(emulator.url)).load("k"), "v1");
  noStrayTraffic();
});

test("GCS: the checkpoint store's writes and reads go through the proxy", async (t) => {
  const emulator = new GcsEmulator({ buckets: ["b"] });
  await emulator.start();
  t.after(() => emulator.close());
  const store = (endpoint: string) => {
    const s = new GcsCheckpointStore(
      { bucket: "b", object_name: "state.json", endpoint_url: endpoint },
      { clock: new ManualClock() },
    );
    t.after(() => s.close());
    return s;
  };
  await store(emulator.url).commit("k", "v1");
  const paths = through(emulator.url);
  assert.ok(paths.includes("/upload/storage/v1/b/b/o"), paths.join(" "));
  assert.equal(await store(local(emulator.url)).load("k"), "v1");
  noStrayTraffic();
});

test("Azure Blob: the container, the store's writes and reads go through the proxy", async (t) => {
  const settings = (blobUrl: string) => ({
    container: "state",
    blob_name: "state.json",
    credential: "connection_string" as const,
    connection_string: azuriteConnectionString(blobUrl),
  });
  const blob = await azureBlobClient(settings(azurite.url), "state.azure");
  await azureContainerClient(blob, "state").createIfNotExists();
  const store = new AzureCheckpointStore(settings(azurite.url), { clock: new ManualClock() });
  t.after(() => store.close());
  await store.commit("k", "v1");
  const paths = through(azurite.url);
  assert.ok(paths.includes("/devstoreaccount1/state"), paths.join(" "));
  assert.ok(paths.includes("/devstoreaccount1/state/state.json"), paths.join(" "));

  const direct = new AzureCheckpointStore(settings(local(azurite.url)), { clock: new ManualClock() });
  t.after(() => direct.close());
  assert.equal(await direct.load("k"), "v1");
  noStrayTraffic();
});

test("Kubernetes: the lease client reaches the API server through the proxy", async (t) => {
  const emulator = await K8sEmulator.start();
  t.after(() => emulator.close());
  const dir = tempDir();
  const read = async (server: string) => {
    const kubeconfig = join(dir, `kubeconfig-${new URL(server).hostname}.yaml`);
    writeFileSync(
      kubeconfig,
      [
        "apiVersion: v1",
        "kind: Config",
        "clusters:",
        `- name: emu\n  cluster:\n    server: ${server}\n    insecure-skip-tls-verify: true`,
        "users:\n- name: u\n  user:\n    token: t",
        "contexts:\n- name: c\n  context:\n    cluster: emu\n    user: u",
        "current-context: c",
      ].join("\n"),
    );
    const kc = kubeConfigFor({ namespace: "ns", kubeconfig });
    return leaseApiFor(kc, "ns", "sf2loki").read(AbortSignal.timeout(10_000));
  };
  emulator.seed("ns", "sf2loki", { spec: { holderIdentity: "a" } });
  assert.equal((await read(emulator.url)).spec.holderIdentity, "a");
  assert.deepEqual(through(emulator.url), ["/apis/coordination.k8s.io/v1/namespaces/ns/leases/sf2loki"]);
  assert.equal((await read(local(emulator.url))).spec.holderIdentity, "a");
  noStrayTraffic();
});

// A proxy that is down reads as the proxy (#34 item 4), not as a Salesforce or Loki outage: with
// HTTP_PROXY / HTTPS_PROXY naming a loopback port nothing listens on (credentials in the URL), every
// client's error names `proxy 127.0.0.1:<port> (from HTTP_PROXY) refused the connection` and says to
// check the proxy or NO_PROXY; the daemon's last line and `doctor`'s proxy row say it; and the
// password is nowhere. The same clients reaching a NO_PROXY host (localhost) still blame the server.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { join } from "node:path";
import { after, before, test, type TestContext } from "node:test";
import { stringify } from "yaml";
import { kubeConfigFor, leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { TokenProvider, type TokenSource } from "../../src/salesforce/auth.ts";
import { salesforceDispatcher } from "../../src/salesforce/connections.ts";
import { PubSubClient, type SubscribeItem } from "../../src/salesforce/pubsub/client.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import { DEMO_SECRET, startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { simSalesforceSettings } from "../../src/sim/salesforce/index.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import { createOtlpSink } from "../../src/sinks/otlp/sink.ts";
import { LazyOtlpExporter } from "../../src/obs/lazy-otlp.ts";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { AzureCheckpointStore } from "../../src/state/azure/store.ts";
import { GcsCheckpointStore } from "../../src/state/gcs-store.ts";
import { S3CheckpointStore } from "../../src/state/s3-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { readProxyEnv } from "../../src/util/proxy-env.ts";
import { azuriteConnectionString } from "../support/azurite.ts";
import { cli } from "../support/cli.ts";
import { setProxyVariables } from "../support/proxy-env.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { entries, settings } from "../sinks/loki/support.ts";

const SECRET = "s3cretpw";
let port = 0;
let dead = "";
let world: DemoWorld;
let restoreEnv: () => void = () => undefined;
const dir = tempDir("sf2loki-proxy-down-");

/** A loopback port that was free a moment ago: a proxy that refuses every connection. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: p } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return p;
}

before(async () => {
  world = await startDemoWorld({ eventsPerTopic: 3 });
  port = await closedPort();
  dead = `http://svc:${SECRET}@127.0.0.1:${port}`;
  // Both names: the simulators speak http, the real services https; NO_PROXY keeps localhost direct.
  restoreEnv = setProxyVariables({ HTTP_PROXY: dead, HTTPS_PROXY: dead, NO_PROXY: "localhost" });
});
after(async () => {
  restoreEnv();
  await world.stop();
});

const refused = (): RegExp =>
  new RegExp(`proxy 127\\.0\\.0\\.1:${port} \\(from HTTP_PROXY\\) refused the connection`);
const checkProxy = /check that the proxy is up and lets sf2loki through, or list 127\.0\.0\.1 in NO_PROXY/;

function assertNamesTheProxy(text: string): void {
  assert.match(text, refused());
  assert.match(text, checkProxy);
  assert.doesNotMatch(text, new RegExp(SECRET));
}

test("the token request names the proxy, and a NO_PROXY login host blames the host", async () => {
  const auth = new TokenProvider({ settings: simSalesforceSettings(world.org, DEMO_SECRET) });
  const err = await auth.token().then(
    () => assert.fail("minted through a dead proxy"),
    (e: unknown) => e as Error,
  );
  assertNamesTheProxy(err.message);
  assert.doesNotMatch(err.message, /check network access/);

  // localhost is exempt: the same dead port as the login host is the server's fault, named as such.
  const direct = new TokenProvider({
    settings: simSalesforceSettings(world.org, DEMO_SECRET, {
      login_url: `http://localhost:${port}`,
    }),
  });
  const own = await direct.token().then(
    () => assert.fail("minted from a closed port"),
    (e: unknown) => e as Error,
  );
  assert.doesNotMatch(own.message, /proxy/);
  assert.match(own.message, new RegExp(`check network access to http://localhost:${port}`));
});

test("a REST call to a proxied instance names the proxy", async (t) => {
  // The token comes straight from localhost; the instance it names (127.0.0.1) is behind the proxy.
  const http = salesforceDispatcher();
  const auth = new TokenProvider({
    settings: simSalesforceSettings(world.org, DEMO_SECRET, {
      login_url: world.org.loginUrl.replace("127.0.0.1", "localhost"),
    }),
    dispatcher: http,
  });
  const rest = new RestClient({ tokens: auth, apiVersion: "60.0", dispatcher: http, closesDispatcher: true });
  t.after(() => rest.close());
  const err = await rest.getJson(rest.path("limits"), { retry: false }).then(
    () => assert.fail("reached the instance through a dead proxy"),
    (e: unknown) => e as Error,
  );
  assertNamesTheProxy(err.message);
  assert.match(err.message, /^could not reach Salesforce for /);
});

test("a Loki push names the proxy in its last attempt", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const sink = createLokiSink(settings(receiver.pushUrl), { clock: new ManualClock() });
  t.after(() => sink.close());
  const err = await sink.push(entries(1)).then(
    () => assert.fail("pushed through a dead proxy"),
    (e: unknown) => e as Error,
  );
  assert.match(err.message, /transport error: /);
  assert.match(err.message, refused());
  assert.doesNotMatch(err.message, new RegExp(SECRET));
  assert.equal(receiver.counts.requests, 0);
});

test("the S3, GCS and Azure checkpoint stores name the proxy, not the store", async (t) => {
  // Nothing needs to listen at the endpoints: the proxy refuses before any request leaves.
  const endpoint = `http://127.0.0.1:${await closedPort()}`;
  const clock = new ManualClock();
  const stores = [
    new S3CheckpointStore(
      { bucket: "b", key: "state.json", endpoint_url: endpoint },
      { clock, clientConfig: { credentials: { accessKeyId: "a", secretAccessKey: "b" } } },
    ),
    new GcsCheckpointStore({ bucket: "b", object_name: "state.json", endpoint_url: endpoint }, { clock }),
    new AzureCheckpointStore(
      {
        container: "state",
        blob_name: "state.json",
        credential: "connection_string",
        connection_string: azuriteConnectionString(endpoint),
      },
      { clock },
    ),
  ];
  for (const store of stores) {
    t.after(() => store.close());
    const err = await store.load("k").then(
      () => assert.fail(`${store.location} answered through a dead proxy`),
      (e: unknown) => e as Error,
    );
    assert.equal((err as Error & { code?: string }).code, "SF2LOKI_STATE_UNAVAILABLE", err.message);
    assert.ok(err.message.startsWith(`read on ${store.location} failed: `), err.message);
    assertNamesTheProxy(err.message);
  }
});

test("the Kubernetes Lease client names the proxy", async () => {
  const server = `http://127.0.0.1:${await closedPort()}`;
  const kubeconfig = writeFile(
    dir,
    "kubeconfig.yaml",
    [
      "apiVersion: v1",
      "kind: Config",
      "clusters:",
      `- name: emu\n  cluster:\n    server: ${server}`,
      "users:\n- name: u\n  user:\n    token: t",
      "contexts:\n- name: c\n  context:\n    cluster: emu\n    user: u",
      "current-context: c",
    ].join("\n"),
  );
  const api = leaseApiFor(kubeConfigFor({ namespace: "ns", kubeconfig }), "ns", "sf2loki");
  const err = await api.read(AbortSignal.timeout(10_000)).then(
    () => assert.fail("read a Lease through a dead proxy"),
    (e: unknown) => e as Error,
  );
  assertNamesTheProxy(err.message);
});

test("OTLP: the logs sink's push and the metric exporter's export name the proxy", async (t) => {
  const endpoint = `http://127.0.0.1:${await closedPort()}`;
  const sink = createOtlpSink(
    {
      url: `${endpoint}/otlp/v1/logs`,
      headers: {},
      compression: "gzip",
      service_name: "sf2loki",
      batch: { max_line_bytes: 262_144 },
    },
    { clock: new ManualClock() },
  );
  t.after(() => sink.close());
  const pushed = await sink.push(entries(1)).then(
    () => assert.fail("exported logs through a dead proxy"),
    (e: unknown) => e as Error,
  );
  assert.match(pushed.message, refused());

  const exporter = new LazyOtlpExporter(`${endpoint}/v1/metrics`, {});
  t.after(() => exporter.shutdown());
  const result = await new Promise<{ code: number; error?: Error }>((resolve) => {
    exporter.export({ resource: resourceFromAttributes({}), scopeMetrics: [] }, resolve);
  });
  assert.equal(result.code, 1);
  assertNamesTheProxy(result.error?.message ?? "");
});

async function subscribeError(t: TestContext, proxy: string): Promise<Error> {
  // A fixed token: the channel alone goes through `proxy`, so its failure is the only one.
  const auth: TokenSource = {
    token: () => Promise.resolve({ accessToken: "t", instanceUrl: world.org.loginUrl }),
    orgId: () => Promise.resolve("00DSIM"),
    invalidate: () => undefined,
    hasToken: () => true,
  };
  const client = new PubSubClient({
    endpoint: world.org.pubsubEndpoint,
    auth,
    insecure: true,
    stallTimeoutMs: 0,
    proxy: readProxyEnv({ HTTP_PROXY: proxy }),
  });
  t.after(() => {
    client.close();
  });
  const items = client.subscribe(
    { topic: "/event/LoginEventStream", preset: "EARLIEST", numRequested: 1 },
    AbortSignal.timeout(20_000),
  );
  try {
    for await (const _ of items as AsyncIterable<SubscribeItem>) break;
  } catch (err) {
    return err as Error;
  }
  return assert.fail("subscribed through a dead proxy");
}

test("Pub/Sub: grpc-js's 'No connection established' through a dead proxy names the proxy", async (t) => {
  const err = await subscribeError(t, dead);
  assert.equal((err as Error & { code?: number }).code, 14, "still UNAVAILABLE, so the source retries");
  assertNamesTheProxy((err as Error & { details?: string }).details ?? "");
  assert.doesNotMatch(err.message, new RegExp(SECRET));
});

function daemonConfig(name: string): string {
  const config = world.config(join(dir, `${name}-state.json`));
  return writeFile(dir, `${name}.yaml`, stringify(config));
}

test("the daemon's last line names the proxy, not the login host", async () => {
  const res = await cli(["--config", daemonConfig("daemon")], process.env);
  const said = `${res.stdout}\n${res.stderr}`;
  assert.notEqual(res.code, 0, said);
  const last = res.stderr.trim().split("\n").at(-1) ?? "";
  assertNamesTheProxy(last);
  assert.doesNotMatch(said, new RegExp(SECRET));
});

test("doctor: the proxy row FAILs naming the proxy and what it carries, and auth names it too", async () => {
  const res = await cli(["doctor", "--json", "--config", daemonConfig("doctor")], process.env);
  assert.equal(res.code, 1, res.stdout + res.stderr);
  const rows = (JSON.parse(res.stdout) as { checks: { name: string; status: string; detail: string }[] })
    .checks;
  assert.deepEqual(
    rows.slice(0, 3).map((r) => [r.name, r.status]),
    [
      ["config", "PASS"],
      ["proxy", "FAIL"],
      ["auth", "FAIL"],
    ],
  );
  const proxyRow = rows[1]!.detail;
  assert.match(proxyRow, refused());
  assert.match(proxyRow, new RegExp(`it carries 127\\.0\\.0\\.1:${new URL(world.org.loginUrl).port}`));
  assertNamesTheProxy(rows[2]!.detail);
  assert.doesNotMatch(res.stdout + res.stderr, new RegExp(SECRET));
});

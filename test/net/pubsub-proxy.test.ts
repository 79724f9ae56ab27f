// Pub/Sub behind the forwarding proxy (test/support/forward-proxy.ts) decides its route with the same
// proxy-env reading as every HTTP client (#34): the NO_PROXY forms grpc-js reads differently on its own
// (a space after a comma, host:port, CIDR, `*`) send it direct, and anything else goes through the
// proxy by CONNECT with the proxy URL's credentials. Judged by the proxy's own record and by the events
// arriving, over the simulator's plaintext gRPC (an http target, so HTTP_PROXY decides).
import assert from "node:assert/strict";
import { after, before, test, type TestContext } from "node:test";
import { PubSubClient, type SubscribeItem } from "../../src/salesforce/pubsub/client.ts";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import { readProxyEnv, type ProxyEnv } from "../../src/util/proxy-env.ts";
import { grpcRoute } from "../../src/util/grpc-route.ts";
import { ConfigError } from "../../src/errors.ts";
import { ForwardProxy } from "../support/forward-proxy.ts";
import { clientCredentials, simOrg } from "../salesforce/support.ts";

const TOPIC = "/event/LoginEventStream";
const EVENTS = 5;

let proxy: ForwardProxy;
before(async () => {
  proxy = await ForwardProxy.start();
});
after(() => proxy.close());

/** Subscribes from the earliest event through a client routed by `env`; the events it got. */
async function receive(t: TestContext, sim: SimOrg, env: ProxyEnv): Promise<number> {
  const client = new PubSubClient({
    endpoint: sim.pubsubEndpoint,
    auth: new TokenProvider({ settings: clientCredentials(sim) }),
    insecure: true,
    stallTimeoutMs: 0,
    proxy: env,
  });
  t.after(() => {
    client.close();
  });
  const items = client.subscribe(
    { topic: TOPIC, preset: "EARLIEST", numRequested: EVENTS },
    new AbortController().signal,
  );
  let events = 0;
  for await (const item of items as AsyncIterable<SubscribeItem>) {
    if (item.kind === "event") events++;
    if (events >= EVENTS) break;
  }
  return events;
}

const withCredentials = (): string => proxy.url.replace("//", "//svc:p%40ss@");

test("Pub/Sub goes through HTTP_PROXY (upper case, which grpc-js alone never reads) with its credentials", async (t) => {
  const sim = await simOrg(t, { topics: [TOPIC], eventsPerTopic: EVENTS });
  const before = proxy.requests.length;
  assert.equal(await receive(t, sim, readProxyEnv({ HTTP_PROXY: withCredentials() })), EVENTS);
  const seen = proxy.requests.slice(before);
  assert.ok(seen.length > 0, "the channel did not go through the proxy");
  const target = sim.pubsubEndpoint.replace(/^dns:/, "");
  for (const r of seen) {
    assert.equal(r.method, "CONNECT");
    assert.equal(r.target, target);
    assert.equal(r.proxyAuthorization, `Basic ${Buffer.from("svc:p@ss").toString("base64")}`);
  }
});

for (const form of ["localhost, 127.0.0.1, .corp", "127.0.0.1:PORT", "10.0.0.0/8 127.0.0.0/8", "*"]) {
  test(`Pub/Sub goes direct for NO_PROXY="${form}", as every HTTP client does`, async (t) => {
    const sim = await simOrg(t, { topics: [TOPIC], eventsPerTopic: EVENTS });
    const port = sim.pubsubEndpoint.slice(sim.pubsubEndpoint.lastIndexOf(":") + 1);
    const before = proxy.requests.length;
    const env = readProxyEnv({ HTTP_PROXY: proxy.url, NO_PROXY: form.replace("PORT", port) });
    assert.equal(await receive(t, sim, env), EVENTS);
    assert.deepEqual(proxy.requests.slice(before), [], "a NO_PROXY endpoint went through the proxy");
  });
}

test("a NO_PROXY entry for another port of the same host still sends Pub/Sub through the proxy", async (t) => {
  const sim = await simOrg(t, { topics: [TOPIC], eventsPerTopic: EVENTS });
  const port = Number(sim.pubsubEndpoint.slice(sim.pubsubEndpoint.lastIndexOf(":") + 1));
  const before = proxy.requests.length;
  const env = readProxyEnv({ HTTP_PROXY: proxy.url, NO_PROXY: `127.0.0.1:${port + 1}` });
  assert.equal(await receive(t, sim, env), EVENTS);
  assert.ok(proxy.requests.slice(before).some((r) => r.method === "CONNECT"));
});

test("an https:// proxy for Pub/Sub is refused in one line naming the variable and the two fixes", () => {
  const env = readProxyEnv({ https_proxy: "https://user:s3cret@proxy.corp:3129" });
  assert.throws(
    () => grpcRoute("api.pubsub.salesforce.com:7443", false, env),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.doesNotMatch(err.message, /s3cret|user/);
      assert.doesNotMatch(err.message, /\n/);
      assert.match(err.message, /^https_proxy names an https:\/\/ proxy \(https:\/\/proxy\.corp:3129\)/);
      assert.match(err.message, /set https_proxy to http:\/\/proxy\.corp:3129/);
      assert.match(err.message, /add api\.pubsub\.salesforce\.com to NO_PROXY/);
      return true;
    },
  );
  // The same https proxy is no concern of a Pub/Sub endpoint NO_PROXY exempts.
  const exempt = readProxyEnv({ HTTPS_PROXY: "https://proxy.corp:3129", NO_PROXY: ".salesforce.com" });
  assert.equal(grpcRoute("api.pubsub.salesforce.com:7443", false, exempt).via, undefined);
});

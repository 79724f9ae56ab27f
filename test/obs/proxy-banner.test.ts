// The start-up lines about the proxy (src/obs/proxy-banner.ts): one line naming the proxies without
// credentials, NO_PROXY and where Pub/Sub goes; nothing without a proxy.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { logProxy, type PubSubEndpoint } from "../../src/obs/proxy-banner.ts";
import { readProxyEnv } from "../../src/util/proxy-env.ts";

function lines(env: NodeJS.ProcessEnv, pubsub: PubSubEndpoint[] = []): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const log = pino(
    { level: "info" },
    { write: (s: string) => out.push(JSON.parse(s) as Record<string, unknown>) },
  );
  logProxy(log, readProxyEnv(env), pubsub);
  return out;
}

test("a proxy in use is one line: the URLs without credentials, and NO_PROXY", () => {
  const env = { https_proxy: "http://svc:s3cret@proxy:3128", no_proxy: "localhost,.svc" };
  const logged = lines(env);
  assert.equal(logged.length, 1);
  assert.equal(logged[0]!.msg, "outbound HTTP and Pub/Sub go through a proxy; NO_PROXY hosts go direct");
  assert.equal(logged[0]!.https_proxy, "http://proxy:3128 (with credentials)");
  assert.equal(logged[0]!.no_proxy, "localhost,.svc");
  assert.doesNotMatch(JSON.stringify(logged), /s3cret/);
  assert.deepEqual(lines({ NO_PROXY: "localhost" }), [], "no proxy, no line");
});

test("the line names where Pub/Sub goes, by the same NO_PROXY as every other client", () => {
  const endpoint = { endpoint: "api.pubsub.salesforce.com:7443", insecure: false };
  const via = lines({ HTTPS_PROXY: "http://u:p@proxy:3128" }, [endpoint]);
  assert.equal(via.length, 1, "upper-case only is enough: there is no second reading to warn about");
  assert.equal(via[0]!.pubsub, "api.pubsub.salesforce.com:7443 via http://proxy:3128");
  const direct = lines({ https_proxy: "http://proxy:3128", NO_PROXY: "localhost, .salesforce.com" }, [
    endpoint,
  ]);
  assert.equal(direct[0]!.pubsub, "api.pubsub.salesforce.com:7443 direct (NO_PROXY)");
  assert.equal(lines({ https_proxy: "http://proxy:3128" }, [])[0]!.pubsub, undefined, "no Pub/Sub, no route");
});

// The start-up lines about the proxy (src/obs/proxy-banner.ts): one line naming the proxies without
// credentials and NO_PROXY, nothing without a proxy, and a warning where Pub/Sub's gRPC client, which
// reads only the lower-case names, would not follow the others.
import assert from "node:assert/strict";
import { test } from "node:test";
import { pino } from "pino";
import { logProxy } from "../../src/obs/proxy-banner.ts";
import { readProxyEnv } from "../../src/util/proxy-env.ts";

function lines(env: NodeJS.ProcessEnv, pubsub = true): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  const log = pino(
    { level: "info" },
    { write: (s: string) => out.push(JSON.parse(s) as Record<string, unknown>) },
  );
  logProxy(log, readProxyEnv(env), env, pubsub);
  return out;
}

test("a proxy in use is one line: the URLs without credentials, and NO_PROXY", () => {
  const env = { https_proxy: "http://svc:s3cret@proxy:3128", no_proxy: "localhost,.svc" };
  const logged = lines(env);
  assert.equal(logged.length, 1);
  assert.equal(logged[0]!.msg, "outbound HTTP goes through a proxy; NO_PROXY hosts go direct");
  assert.equal(logged[0]!.https_proxy, "http://proxy:3128 (with credentials)");
  assert.equal(logged[0]!.no_proxy, "localhost,.svc");
  assert.doesNotMatch(JSON.stringify(logged), /s3cret/);
  assert.deepEqual(lines({ NO_PROXY: "localhost" }), [], "no proxy, no line");
});

test("upper-case only: Pub/Sub's gRPC client would go direct, or ignore NO_PROXY, and says so", () => {
  const upper = lines({ HTTPS_PROXY: "http://proxy:3128" });
  assert.equal(upper.length, 2);
  assert.match(
    String(upper[1]!.msg),
    /gRPC client reads only the lower-case https_proxy .* set https_proxy as well/,
  );
  const noProxy = lines({ https_proxy: "http://proxy:3128", NO_PROXY: "localhost" });
  assert.match(String(noProxy[1]!.msg), /reads only the lower-case no_proxy .* set no_proxy as well/);
  assert.equal(lines({ HTTPS_PROXY: "http://proxy:3128" }, false).length, 1, "no Pub/Sub, no warning");
  assert.equal(lines({ https_proxy: "http://proxy:3128", no_proxy: "localhost" }).length, 1);
});

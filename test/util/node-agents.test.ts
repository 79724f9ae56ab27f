// The node:http side of the proxy (src/util/node-agents.ts): the agent options carry only the proxy
// proxy-env.ts chose for the endpoint, and a Node whose http.Agent cannot speak to a proxy fails the
// start in one line instead of silently going direct.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../src/errors.ts";
import { agentsSpeakProxy, nodeAgentOptions } from "../../src/util/node-agents.ts";
import { setProxyVariables } from "../support/proxy-env.ts";

test("options for one endpoint: its proxy for either scheme, or none; too old a Node refuses", (t) => {
  t.after(setProxyVariables({ HTTPS_PROXY: "http://u:p@proxy:3128", NO_PROXY: ".internal" }));
  const through = "http://u:p@proxy:3128/";
  assert.deepEqual(nodeAgentOptions("https://s3.eu-west-1.amazonaws.com", "24.5.0"), {
    keepAlive: true,
    proxyEnv: { HTTP_PROXY: through, HTTPS_PROXY: through },
  });
  assert.deepEqual(nodeAgentOptions("https://minio.internal:9000", "22.12.0"), {
    keepAlive: true,
    proxyEnv: {},
  });
  assert.deepEqual(
    nodeAgentOptions("http://minio:9000", "22.12.0"),
    { keepAlive: true, proxyEnv: {} },
    "no HTTP_PROXY",
  );
  assert.throws(
    () => nodeAgentOptions("https://s3.eu-west-1.amazonaws.com", "22.20.0"),
    (err: unknown) =>
      err instanceof ConfigError &&
      err.message ===
        "https://s3.eu-west-1.amazonaws.com is to be reached through the proxy http://proxy:3128, but Node 22.20.0 " +
          "cannot send node:http requests through a proxy; run Node >= 22.21 or >= 24.5 (source scripts/use-node.sh), " +
          "or list the host in NO_PROXY",
  );
});

test("which Node versions' http.Agent takes proxyEnv", () => {
  for (const v of ["22.21.0", "22.22.1", "24.5.0", "24.22.3", "25.0.0", "26.1.0"])
    assert.ok(agentsSpeakProxy(v), v);
  for (const v of ["22.12.0", "22.20.9", "23.11.0", "24.4.1", "20.19.0"]) assert.ok(!agentsSpeakProxy(v), v);
});

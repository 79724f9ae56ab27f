// proxyFault names the proxy only when the request went through it and failed at the socket or at
// CONNECT (real undici, Node and grpc-js texts), never for a direct or NO_PROXY request or for the
// server's own HTTP answer; probeProxy asks a real forwarding proxy for the tunnel a client would.
import assert from "node:assert/strict";
import { createServer } from "node:net";
import { test } from "node:test";
import { ProxyAgent, request } from "undici";
import { readProxyEnv } from "../../src/util/proxy-env.ts";
import { proxyFault, unreachable } from "../../src/util/proxy-fault.ts";
import { probeProxy } from "../../src/util/proxy-probe.ts";
import { ForwardProxy } from "../support/forward-proxy.ts";

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function undiciError(
  proxy: string,
  target = "https://login.example.com/services/oauth2/token",
): Promise<unknown> {
  const agent = new ProxyAgent({ uri: proxy });
  try {
    await request(target, { dispatcher: agent });
  } catch (err) {
    return err;
  } finally {
    await agent.close();
  }
  return assert.fail("the request went through");
}

test("a refused and an unresolvable proxy are named with the variable that chose them", async () => {
  const port = await closedPort();
  const env = readProxyEnv({ HTTPS_PROXY: `http://svc:pw@127.0.0.1:${port}` });
  const target = "https://login.example.com";
  const refused = await undiciError(`http://svc:pw@127.0.0.1:${port}`);
  assert.equal(
    proxyFault(refused, target, env),
    `proxy 127.0.0.1:${port} (from HTTPS_PROXY) refused the connection`,
  );
  const lower = readProxyEnv({ https_proxy: "http://nosuch.invalid:3128" });
  const notFound = await undiciError("http://nosuch.invalid:3128");
  assert.equal(
    proxyFault(notFound, target, lower),
    "proxy nosuch.invalid:3128 (from https_proxy) does not resolve",
  );
});

test("direct, NO_PROXY and HTTP answers of the server's own are never the proxy's", async () => {
  const port = await closedPort();
  const refused = await undiciError(`http://127.0.0.1:${port}`);
  const target = "https://login.example.com";
  assert.equal(proxyFault(refused, target, readProxyEnv({})), undefined, "no proxy set");
  assert.equal(
    proxyFault(refused, target, readProxyEnv({ HTTPS_PROXY: "http://p:3128", NO_PROXY: ".example.com" })),
    undefined,
    "NO_PROXY",
  );
  assert.equal(
    proxyFault(refused, "http://login.example.com", readProxyEnv({ HTTPS_PROXY: "http://p:3128" })),
    undefined,
    "an http target does not go through HTTPS_PROXY",
  );
  const reset = Object.assign(new Error("other side closed"), { code: "UND_ERR_SOCKET" });
  assert.equal(
    proxyFault(reset, target, readProxyEnv({ HTTPS_PROXY: "http://p:3128" })),
    "the connection through proxy p:3128 (from HTTPS_PROXY) to login.example.com was cut (UND_ERR_SOCKET), by the proxy or by the server behind it",
    "a cut after the tunnel was up is not blamed on the proxy alone",
  );
  const status = Object.assign(new Error("HTTP 503 from the server"), { status: 503 });
  assert.equal(proxyFault(status, target, readProxyEnv({ HTTPS_PROXY: "http://p:3128" })), undefined);
  const direct = unreachable(refused, target, readProxyEnv({}));
  assert.equal(direct.hint, `check network access to ${target}`);
});

test("a proxy that will not tunnel, in undici's, Node's and grpc-js's words, keeps credentials out", () => {
  const env = readProxyEnv({ HTTPS_PROXY: "http://svc:pw@proxy.corp:3128" });
  const target = "https://loki.example.com:443/loki/api/v1/push";
  const want =
    "proxy proxy.corp:3128 (from HTTPS_PROXY) would not open a tunnel to loki.example.com (it answered HTTP 502 to CONNECT)";
  const undiciText = new Error("Proxy response (502) !== 200 when HTTP Tunneling");
  assert.equal(proxyFault(undiciText, target, env), want);
  const nodeText = Object.assign(
    new Error(
      "Failed to establish tunnel to loki.example.com:443 via http://svc:pw@proxy.corp:3128: HTTP/1.1 502 Bad Gateway",
    ),
    { code: "ERR_PROXY_TUNNEL" },
  );
  assert.equal(proxyFault(nodeText, target, env), want);
  const said = unreachable(nodeText, target, env);
  assert.doesNotMatch(said.text, /svc:pw/);
  assert.match(said.hint, /list loki\.example\.com in NO_PROXY/);
  const grpcText = {
    code: 14,
    details: "No connection established. Last error: connect ECONNREFUSED 10.0.0.9:3128",
  };
  assert.equal(
    proxyFault(grpcText, target, env),
    "proxy proxy.corp:3128 (from HTTPS_PROXY) refused the connection",
  );
});

test("probeProxy: a real proxy opens the tunnel, a dead one refuses, a dead target closes it", async (t) => {
  const proxy = await ForwardProxy.start();
  t.after(() => proxy.close());
  const server = createServer((s) => s.end());
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const live = `127.0.0.1:${(server.address() as { port: number }).port}`;
  const withCredentials = new URL(proxy.url.replace("//", "//svc:p%40ss@"));

  const ok = await probeProxy(withCredentials, live, 2000);
  assert.ok(ok.ok && ok.tunnelled, JSON.stringify(ok));
  const seen = proxy.requests.at(-1)!;
  assert.equal(seen.method, "CONNECT");
  assert.equal(seen.proxyAuthorization, `Basic ${Buffer.from("svc:p@ss").toString("base64")}`);

  const dead = await probeProxy(new URL(`http://127.0.0.1:${await closedPort()}`), live, 2000);
  assert.deepEqual(dead, { ok: false, what: "refused the connection" });
  const noTarget = await probeProxy(new URL(proxy.url), `127.0.0.1:${await closedPort()}`, 2000);
  assert.equal(noTarget.ok, false);
  const socketOnly = await probeProxy(new URL(proxy.url), undefined, 2000);
  assert.equal(socketOnly.ok && !socketOnly.tunnelled, true);
});

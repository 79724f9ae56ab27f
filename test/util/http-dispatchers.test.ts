// undici's Pool, Agent and ProxyAgent loaded by path (src/util/http-dispatchers.ts) still carry the
// request API undici's index would have given them, against a real server; a version that moved the
// files fails here.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import { Agent, Pool, isClosed, proxyAgentClass } from "../../src/util/http-dispatchers.ts";

test("Pool and Agent from undici's files answer request() over a real socket", async (t) => {
  const server = createServer((req, res) => {
    res.writeHead(200, { "content-type": "text/plain" }).end(`${req.method} ${req.url}`);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => server.close());
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;

  const pool = new Pool(origin);
  const agent = new Agent();
  t.after(() => Promise.all([pool.close(), agent.close()]));
  const viaPool = await pool.request({ path: "/loki/api/v1/push", method: "POST", body: "x" });
  assert.equal(viaPool.statusCode, 200);
  assert.equal(await viaPool.body.text(), "POST /loki/api/v1/push");
  const viaAgent = await agent.request({ origin, path: "/services/data?q=1", method: "GET" });
  assert.equal(viaAgent.statusCode, 200);
  assert.equal(await viaAgent.body.text(), "GET /services/data?q=1");
});

test("undici's ProxyAgent loads from its file too, with the request API (first use of a proxy)", async () => {
  const ProxyAgent = proxyAgentClass();
  const agent = new ProxyAgent({ uri: "http://127.0.0.1:9" });
  assert.equal(typeof agent.request, "function");
  assert.equal(isClosed(agent), false);
  await agent.close();
  assert.equal(isClosed(agent), true);
});

// The synchronous Azurite bridge must never hand one call the answer to another: a call that timed out
// can still be answered later, while the next call waits.
import assert from "node:assert/strict";
import { once } from "node:events";
import { test } from "node:test";
import { Worker } from "node:worker_threads";
import { AzuriteSync } from "./azurite-sync.ts";

/**
 * An HTTP server on its own thread (the test's thread blocks inside call()). It holds GET /slow until
 * GET /fast arrives, answers /slow with 201 first, and /fast with 202 once that answer is out.
 */
const SERVER = `
const { createServer } = require("node:http");
const { parentPort } = require("node:worker_threads");
let slow;
const server = createServer((req, res) => {
  if (req.url === "/slow") { slow = res; return; }
  slow.writeHead(201).end("slow");
  slow.once("finish", () => setTimeout(() => res.writeHead(202).end("fast"), 50));
});
server.listen(0, "127.0.0.1", () => parentPort.postMessage(server.address().port));
parentPort.on("message", () => { server.closeAllConnections(); server.close(); parentPort.close(); });
`;

test("an answer that arrives after its call timed out is dropped, not given to the next call", async () => {
  const server = new Worker(SERVER, { eval: true });
  const [port] = (await once(server, "message")) as [number];
  // /slow is held until /fast arrives, so the first call times out whatever the budget: a budget this
  // long only keeps the second call (50 ms of server time) from missing it on a loaded host.
  const sync = new AzuriteSync(2000);
  try {
    const get = (path: string) =>
      sync.call({
        op: "raw",
        method: "GET",
        url: `http://127.0.0.1:${port}${path}`,
        headers: {},
        body: Buffer.alloc(0),
      });
    assert.throws(() => get("/slow"), /did not answer raw within 2000 ms/);
    const answer = get("/fast");
    assert.equal(answer.status, 202);
    assert.equal(answer.body.toString(), "fast");
  } finally {
    await sync.close();
    server.postMessage("stop");
    await once(server, "exit").catch(() => undefined);
  }
});

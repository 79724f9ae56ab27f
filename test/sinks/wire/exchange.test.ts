// One push exchange through the real undici Pool against a real HTTP server on loopback: what is kept
// of an answer, what ends it early, what cancels it, and that a pushed body does not outlive its push
// (the reason exchange.ts exists: undici's request() kept each body until a full GC).
import assert from "node:assert/strict";
import { getEventListeners, once } from "node:events";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { setFlagsFromString } from "node:v8";
import { runInNewContext } from "node:vm";
import { metrics } from "@opentelemetry/api";
import { silentLogger } from "../../../src/obs/logger.ts";
import { DISCARD_MAX_BYTES, exchange, type ExchangeRequest } from "../../../src/sinks/wire/exchange.ts";
import { createLokiPool, LokiService } from "../../../src/sinks/loki/service.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { Pool } from "../../../src/util/http-dispatchers.ts";
import { idle, timed } from "../../support/timing.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

/** A server whose every request is answered by `handler` once its body has arrived, and a pool on it. */
async function rig(t: TestContext, handler: Handler) {
  const sockets = new Set<unknown>();
  let requests = 0;
  const server = createServer((req, res) => {
    requests++;
    sockets.add(req.socket);
    req.resume();
    req.once("end", () => {
      handler(req, res);
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const pool = createLokiPool(origin, { connectMs: 5_000, responseMs: 5_000 });
  t.after(async () => {
    await pool.destroy();
    server.closeAllConnections();
    server.close();
  });
  const request = (body = Buffer.from("push")): ExchangeRequest => ({
    origin,
    path: "/loki/api/v1/push",
    method: "POST",
    headers: { "content-type": "application/x-protobuf" },
    body,
    headersTimeout: 5_000,
    bodyTimeout: 5_000,
  });
  return { pool, origin, request, requests: () => requests, connections: () => sockets.size };
}

const keepFor = (status: number): number => (status === 400 ? 4096 : status >= 300 ? 64 : 0);

test("a 2xx answer is read to its end and dropped; the connection is kept for the next push", async (t) => {
  const r = await rig(t, (_req, res) => res.writeHead(200).end("x".repeat(10_000)));
  for (let i = 0; i < 3; i++) {
    const got = await exchange(r.pool, r.request(), keepFor);
    assert.deepEqual([got.status, got.text, got.bodyError], [200, "", undefined]);
    await idle(); // undici hands the socket back to the pool after the answer
  }
  assert.equal(r.requests(), 3);
  assert.equal(r.connections(), 1);
});

test("an error answer keeps its first keepBytes(status) bytes, and its headers", async (t) => {
  const r = await rig(t, (req, res) => {
    if (req.headers["x-case"] === "429")
      res.writeHead(429, { "retry-after": "7" }).end("slow down ".repeat(20));
    else res.writeHead(400).end("x" + "é".repeat(3000)); // the cut at 4096 bytes lands inside an "é"
  });
  const refused = await exchange(r.pool, r.request(), keepFor);
  assert.equal(refused.status, 400);
  assert.equal(refused.text, "x" + "é".repeat(2047) + "\uFFFD");
  const limited = await exchange(
    r.pool,
    { ...r.request(), headers: { ...r.request().headers, "x-case": "429" } },
    keepFor,
  );
  assert.equal(limited.status, 429);
  assert.equal(limited.headers["retry-after"], "7");
  assert.equal(limited.text, "slow down ".repeat(20).slice(0, 64));
});

test("an answer that runs on past what is kept is cut after DISCARD_MAX_BYTES, not waited for", async (t) => {
  let endless: ServerResponse | undefined;
  const r = await rig(t, (_req, res) => {
    res.writeHead(500);
    res.write(Buffer.alloc(DISCARD_MAX_BYTES * 2, 0x61)); // and never ends
    endless = res;
  });
  const got = await exchange(r.pool, r.request(), keepFor);
  assert.deepEqual([got.status, got.text, got.bodyError], [500, "a".repeat(64), undefined]);
  assert.ok(endless && !endless.writableEnded);
});

test("a body that breaks off after the headers resolves with bodyError and what had arrived", async (t) => {
  const r = await rig(t, (_req, res) => {
    res.writeHead(503, { "content-length": "1000" });
    res.write("unavailable", () => res.socket?.destroy());
  });
  const got = await exchange(r.pool, r.request(), keepFor);
  assert.equal(got.status, 503);
  assert.equal(got.text, "unavailable");
  assert.ok(got.bodyError instanceof Error);
});

test("an informational answer is not the answer: 103 then a cut connection rejects like no answer", async (t) => {
  const r = await rig(t, (req, res) => {
    res.writeEarlyHints({ link: "</ready>; rel=preload" }, () => {
      if (req.headers["x-case"] === "cut") res.socket?.destroy();
      else res.writeHead(204).end();
    });
  });
  const answered = await exchange(r.pool, r.request(), keepFor);
  assert.equal(answered.status, 204);
  const cut = { ...r.request(), headers: { ...r.request().headers, "x-case": "cut" } };
  await assert.rejects(exchange(r.pool, cut, keepFor));
});

test("no answer at all (connection refused) rejects", async (t) => {
  const r = await rig(t, (_req, res) => res.end());
  const closed = createLokiPool("http://127.0.0.1:1", { connectMs: 2_000, responseMs: 2_000 });
  t.after(() => closed.destroy());
  await assert.rejects(exchange(closed, { ...r.request(), origin: "http://127.0.0.1:1" }, keepFor));
});

test("an aborted signal: nothing is sent; aborted mid-push: it settles at once with the signal's reason", async (t) => {
  const r = await rig(t, () => undefined); // never answers
  const before = new AbortController();
  before.abort(new Error("stopping"));
  await assert.rejects(exchange(r.pool, r.request(), keepFor, before.signal), /stopping/);
  assert.equal(r.requests(), 0);

  const during = new AbortController();
  const pending = exchange(r.pool, r.request(), keepFor, during.signal);
  while (r.requests() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const ms = await timed(async () => {
    during.abort(new Error("lease lost"));
    await assert.rejects(pending, /lease lost/);
  });
  assert.ok(ms < 1_000, `settled ${ms} ms after the abort`);
});

test("a push aborted while it waits for a connection settles at once and is never sent", async (t) => {
  const held: ServerResponse[] = [];
  const r = await rig(t, (_req, res) => held.push(res));
  const one = new Pool(r.origin, { connections: 1 });
  t.after(() => one.destroy());
  const first = exchange(one, r.request(), keepFor);
  while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  const waiting = new AbortController();
  const queued = exchange(one, r.request(), keepFor, waiting.signal);
  waiting.abort(new Error("stopping"));
  await assert.rejects(queued, /stopping/);
  held.shift()!.writeHead(204).end();
  assert.equal((await first).status, 204);
  const third = exchange(one, r.request(), keepFor);
  while (held.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
  held.shift()!.writeHead(204).end();
  assert.equal((await third).status, 204);
  assert.equal(r.requests(), 2);
});

test("a settled exchange leaves no listener on its signal", async (t) => {
  const r = await rig(t, (_req, res) => res.writeHead(204).end());
  const run = new AbortController();
  for (let i = 0; i < 5; i++) await exchange(r.pool, r.request(), keepFor, run.signal);
  assert.equal(getEventListeners(run.signal, "abort").length, 0);
});

test("a pushed body is garbage once its push is answered: young collections free it", async (t) => {
  // Each 64 KiB body is made, pushed through LokiService and dropped, then a young-generation GC
  // runs. Bodies that outlive their push are kept through that GC, reach the old generation and
  // pile up until a full GC: with undici's request() all 200 did (~12.5 MiB).
  setFlagsFromString("--expose-gc");
  const gc = runInNewContext("gc") as (options: { type: "minor" | "major" }) => void;
  const r = await rig(t, (_req, res) => res.writeHead(204).end());
  const service = new LokiService({
    url: new URL(`${r.origin}/loki/api/v1/push`),
    where: r.origin,
    authHeaders: {},
    dispatcher: r.pool,
    clock: new ManualClock(),
    logger: silentLogger,
    bytesPushed: metrics.getMeter("test").createCounter("bytes"),
  });
  const send = () => service.send({ body: Buffer.alloc(64 * 1024, 1), headers: {} });
  for (let i = 0; i < 10; i++) await send();
  gc({ type: "major" });
  const before = process.memoryUsage().arrayBuffers;
  for (let i = 0; i < 200; i++) {
    await send();
    gc({ type: "minor" });
  }
  const grownMiB = (process.memoryUsage().arrayBuffers - before) / 2 ** 20;
  assert.ok(grownMiB < 3, `array buffers grew ${grownMiB.toFixed(1)} MiB over 200 pushes of 64 KiB`);
});

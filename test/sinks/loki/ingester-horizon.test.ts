// Loki's ingester horizon as the lookup learns it (#35): read from the Loki's own /config, assumed at
// Loki's default when that does not answer, or set; and the flush that makes entries past it visible,
// waited for until Loki's flush queue is empty. Against HTTP servers on loopback.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import {
  DEFAULT_INGESTERS_WITHIN_MS,
  flushProgressOf,
  ingestersWithinOf,
} from "../../../src/sinks/receiving-loki/ingester-horizon.ts";
import { LokiLookup } from "../../../src/sinks/receiving-loki/lookup.ts";
import { LOKI_DEADLINES } from "../../../src/sinks/loki/service.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { listenLoopback } from "../../support/loopback.ts";

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

async function serve(t: TestContext, handler: Handler): Promise<{ url: string; seen: string[] }> {
  const seen: string[] = [];
  const server = createServer((req, res) => {
    seen.push(`${req.method} ${req.url} ${String(req.headers["x-scope-orgid"] ?? "")}`);
    req.resume();
    handler(req, res);
  });
  return { url: await listenLoopback(t, server), seen };
}

function lookup(
  t: TestContext,
  base: string,
  over: Partial<ConstructorParameters<typeof LokiLookup>[0]> = {},
) {
  const l = new LokiLookup({
    base,
    authHeaders: { "X-Scope-OrgID": "acme" },
    maxLineBytes: 0,
    deadlines: LOKI_DEADLINES,
    clock: new ManualClock({ startMs: 0, auto: true }),
    ...over,
  });
  t.after(() => l.close());
  return l;
}

const signal = new AbortController().signal;

test("query_ingesters_within is read from a Loki's /config YAML, Go durations and all", () => {
  assert.equal(ingestersWithinOf("querier:\n  query_ingesters_within: 3h0m0s\n"), 3 * 3_600_000);
  assert.equal(ingestersWithinOf("querier:\n  query_ingesters_within: 90m\n"), 90 * 60_000);
  assert.equal(ingestersWithinOf("querier:\n  query_ingesters_within: 0s\n"), 0);
  assert.equal(ingestersWithinOf("ingester:\n  chunk_idle_period: 30m\n"), undefined);
});

test("the horizon comes from the Loki's /config, asked once with the push's tenant", async (t) => {
  const loki = await serve(t, (_req, res) => {
    res.end("server:\n  http_listen_port: 3100\nquerier:\n  query_ingesters_within: 12h0m0s\n");
  });
  const l = lookup(t, loki.url);
  assert.deepEqual(await l.horizon(signal), { ms: 12 * 3_600_000, source: "config" });
  assert.deepEqual(await l.horizon(signal), { ms: 12 * 3_600_000, source: "config" });
  assert.deepEqual(loki.seen, ["GET /config acme"]);
  assert.equal(l.flush, undefined, "no flush unless one is configured");
});

test("a gateway's path prefix is kept; 0 means Loki asks its ingesters for every range", async (t) => {
  const loki = await serve(t, (_req, res) => res.end("querier:\n  query_ingesters_within: 0s\n"));
  const l = lookup(t, `${loki.url}/tenant-a`);
  assert.deepEqual(await l.horizon(signal), { ms: undefined, source: "config" });
  assert.deepEqual(loki.seen, ["GET /tenant-a/config acme"]);
});

test("a Loki that does not serve /config is taken at Loki's default, with the reason", async (t) => {
  const loki = await serve(t, (_req, res) => {
    res.statusCode = 404;
    res.end("404 page not found");
  });
  const h = await lookup(t, loki.url).horizon(signal);
  assert.equal(h.ms, DEFAULT_INGESTERS_WITHIN_MS);
  assert.equal(h.source, "assumed");
  assert.match(h.why ?? "", /\/config answered HTTP 404/);
});

test("a configured horizon is used as set, without asking Loki", async (t) => {
  const loki = await serve(t, (_req, res) => res.end(""));
  assert.deepEqual(await lookup(t, loki.url, { ingestersWithin: 7_200_000 }).horizon(signal), {
    ms: 7_200_000,
    source: "setting",
  });
  assert.deepEqual(await lookup(t, loki.url, { ingestersWithin: 0 }).horizon(signal), {
    ms: undefined,
    source: "setting",
  });
  assert.deepEqual(loki.seen, []);
});

test("a flush is POSTed, then waited for until Loki's flush queue is empty", async (t) => {
  const queue = [5, 2, 0];
  const ingester = await serve(t, (req, res) => {
    if (req.url === "/flush") {
      res.statusCode = 204;
      res.end();
    } else res.end(`# HELP x\nloki_ingester_flush_queue_length ${queue.shift() ?? 0}\n`);
  });
  const query = await serve(t, (_req, res) => res.end(""));
  const l = lookup(t, query.url, { flushUrl: `${ingester.url}/flush` });
  await l.flush!(signal);
  assert.deepEqual(ingester.seen, ["POST /flush acme", ...Array<string>(6).fill("GET /metrics acme")]);
  assert.deepEqual(query.seen, [], "the flush goes to its own URL: 2 polls to drain, 4 to settle 300 ms");
});

test("a flush is waited for until the chunks taken off the queue are written, not only dequeued", async (t) => {
  // Loki counts a queued op out when it dequeues it and its chunk as flushed once the store has it.
  const polls = [
    { queue: 0, requests: 3, flushed: 1, failed: 0 },
    { queue: 0, requests: 3, flushed: 2, failed: 0 },
    { queue: 0, requests: 3, flushed: 2, failed: 1 },
    { queue: 0, requests: 3, flushed: 2, failed: 1 },
  ];
  const ingester = await serve(t, (req, res) => {
    if (req.url === "/flush") {
      res.statusCode = 204;
      res.end();
      return;
    }
    const p = polls.length > 1 ? polls.shift()! : polls[0]!;
    res.end(
      `loki_ingester_flush_queue_length ${p.queue}\n` +
        `loki_ingester_chunks_flush_requests_total ${p.requests}\n` +
        `loki_ingester_chunks_flushed_total{reason="full"} 0\n` +
        `loki_ingester_chunks_flushed_total{reason="forced"} ${p.flushed}\n` +
        `loki_ingester_chunks_flush_failures_total ${p.failed}\n`,
    );
  });
  const l = lookup(t, ingester.url, { flushUrl: `${ingester.url}/flush` });
  await l.flush!(signal);
  // Idle from the third poll on (2 flushed + 1 failed of 3), then settled 300 ms: three more polls.
  assert.equal(ingester.seen.length, 1 + 3 + 3, "polled until every chunk was written and stayed so");
});

test("flushProgressOf sums every series of Loki's flush metrics", () => {
  assert.deepEqual(
    flushProgressOf(
      "# HELP loki_ingester_flush_queue_length x\nloki_ingester_flush_queue_length 2\n" +
        'loki_ingester_chunks_flush_requests_total 10\nloki_ingester_chunks_flushed_total{reason="idle"} 4\n' +
        'loki_ingester_chunks_flushed_total{reason="forced"} 3\nloki_ingester_chunks_flush_failures_total 1\n',
    ),
    { queued: 2, writing: 2, flushed: 7 },
  );
  assert.deepEqual(flushProgressOf("loki_ingester_flush_queue_length 0\n"), {
    queued: 0,
    writing: 0,
    flushed: 0,
  });
});

test("a flush URL that does not answer 2xx is an error naming it", async (t) => {
  const ingester = await serve(t, (_req, res) => {
    res.statusCode = 404;
    res.end("404 page not found");
  });
  const l = lookup(t, ingester.url, { flushUrl: `${ingester.url}/flush` });
  await assert.rejects(l.flush!(signal), /POST http:\/\/127\.0\.0\.1:\d+\/flush answered HTTP 404/);
});

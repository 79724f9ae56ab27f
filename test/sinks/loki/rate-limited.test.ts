// A tenant's ingestion rate limit (#26): Loki's 429 that names it is read, the batch is split below
// what was refused and paced to the named rate, nothing is lost and nothing is sent twice. The
// simulated Loki applies the limit as Loki's distributor does (a token bucket per tenant, refusing a
// request larger than the burst forever) on the test's clock.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../../src/model.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { createLokiSink } from "../../../src/sinks/loki/sink.ts";
import { parseRateLimited } from "../../../src/sinks/receiving-loki/rate-limited.ts";
import { RELAX_AFTER_MS, lokiBytesOf } from "../../../src/sinks/receiving-loki/tenant-pacer.ts";
import { startLokiReceiver } from "../../../src/sim/loki.ts";
import { pino } from "pino";
import { T0_NS, TestMetrics, settings } from "./support.ts";

test("Loki's 429 texts: the ingestion limit is read from 3.4's and later wordings; other 429s are not it", () => {
  assert.deepEqual(
    parseRateLimited(
      "Ingestion rate limit exceeded for user slow (limit: 262144 bytes/sec) while attempting to ingest " +
        "'1000' lines totaling '740013' bytes, reduce log volume or contact your Loki administrator to see if " +
        "the limit can be increased\n",
    ),
    { tenant: "slow", limitBytesPerSecond: 262_144, lines: 1000, bytes: 740_013 },
  );
  assert.deepEqual(
    parseRateLimited(
      "ingestion rate limit exceeded for user t-1, policy gold (limit: 1048576 bytes/sec) while attempting " +
        "to ingest '3' lines totaling '90' bytes, reduce log volume",
    ),
    { tenant: "t-1", limitBytesPerSecond: 1_048_576, lines: 3, bytes: 90 },
  );
  assert.deepEqual(
    parseRateLimited(
      "ingestion rate limit exceeded for user x across multiple buckets: a, b; reduce log volume",
    ),
    { tenant: "x", limitBytesPerSecond: undefined, lines: undefined, bytes: undefined },
  );
  assert.equal(
    parseRateLimited(
      "Per stream rate limit exceeded (limit: 3MB/sec) while attempting to ingest for stream '{a=\"b\"}' totaling 4MB",
    ),
    undefined,
  );
  assert.equal(parseRateLimited("<html>429 Too Many Requests</html>"), undefined);
});

/** ~740 bytes a line, like an EventLogFile row: 1 000 of them are 740 KB, above a 512 KiB burst. */
function rows(n: number, from = 0): LogEntry[] {
  return Array.from(
    { length: n },
    (_, i) =>
      new LogEntry({
        timestampNs: T0_NS + BigInt(from + i) * 1_000_000n,
        labels: { source: "eventlogfile", event_type: "API" },
        line: `{"n":${from + i},"pad":"${"x".repeat(700)}"}`,
        structuredMetadata: { level: "info", user_id: `005${from + i}` },
        checkpoint: { key: "elf:API", value: String(from + i) },
      }),
  );
}

async function limitedWorld(t: TestContext, limit = { bytesPerSecond: 262_144, burstBytes: 524_288 }) {
  const clock = new ManualClock();
  const receiver = await startLokiReceiver({ ingestionRate: limit, rateNowMs: () => clock.monotonic() });
  t.after(() => receiver.stop());
  const records: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (l: string) => records.push(JSON.parse(l) as never) });
  const metrics = new TestMetrics();
  const sink = createLokiSink(settings(receiver.pushUrl, { tenant_id: "slow" }), {
    clock,
    meter: metrics.meter,
    logger,
  });
  t.after(() => sink.close());
  return { clock, receiver, sink, records, metrics };
}

test("a tenant limited below one batch: split under the burst, paced to the named rate, every entry once", async (t) => {
  const w = await limitedWorld(t);
  const batches = [rows(1000), rows(1000, 1000), rows(1000, 2000)];
  const bytes = batches.reduce((n, b) => n + lokiBytesOf(b), 0);
  const started = w.clock.monotonic();
  for (const batch of batches) await w.sink.push(batch);
  const seconds = (w.clock.monotonic() - started) / 1000;

  assert.equal(w.receiver.counts.unique, 3000, "every entry stored");
  assert.equal(w.receiver.counts.duplicates, 0, "none twice");
  // Learned once: the first 740 KB request is refused, its halves fit the 512 KiB burst, and the pacing
  // keeps the tenant's bucket from running dry again.
  assert.ok(
    w.receiver.counts.rateLimited <= 2,
    `${w.receiver.counts.rateLimited} requests refused for the rate`,
  );
  const achieved = bytes / seconds;
  assert.ok(
    achieved >= 0.8 * 262_144 && achieved <= 262_144 * 1.05 + 524_288 / seconds,
    `achieved ${Math.round(achieved)} bytes/s against a limit of 262144`,
  );
  const warns = w.records.filter((r) => r.level === 40);
  assert.equal(warns.length, 1, "one WARN while limited (at most one a minute)");
  assert.match(warns[0]!.msg, /rate-limiting tenant 'slow' at its ingestion limit of 262144 bytes\/s/);
  assert.match(warns[0]!.msg, /ingestion_rate_mb and ingestion_burst_size_mb/);
  assert.match(warns[0]!.msg, /sink\.loki\.egress\.max_bytes_per_second/);
  assert.doesNotMatch(warns[0]!.msg, /reachable|credentials/);
  assert.equal(await w.metrics.sum("sf2loki_loki_rate_limited_responses"), w.receiver.counts.rateLimited);
  assert.ok((await w.metrics.sum("sf2loki_loki_rate_limited_seconds")) >= seconds * 0.8);
});

test("a burst smaller than a single entry's neighbours: halving goes down to one entry and still delivers", async (t) => {
  // 2 KiB burst: two rows per request at most.
  const w = await limitedWorld(t, { bytesPerSecond: 4096, burstBytes: 2048 });
  await w.sink.push(rows(40));
  assert.equal(w.receiver.counts.unique, 40);
  assert.equal(w.receiver.counts.duplicates, 0);
  const accepted = w.receiver.requests.filter((r) => r.status === 204);
  assert.ok(
    accepted.every((r) => r.accepted <= 2),
    "no accepted request above the burst",
  );
});

test("after a quiet spell the pacing is lifted: a raised limit is used at once", async (t) => {
  const w = await limitedWorld(t);
  await w.sink.push(rows(1000));
  assert.ok(w.receiver.counts.rateLimited >= 1);
  const limitedRequests = w.receiver.counts.requests;
  w.clock.advance(RELAX_AFTER_MS + 1);
  // The tenant's bucket is full again after the quiet spell; a small push goes unpaced and whole.
  const before = w.clock.monotonic();
  await w.sink.push(rows(100, 5000));
  assert.equal(w.clock.monotonic(), before, "no wait once the pacing was lifted");
  assert.equal(w.receiver.counts.requests, limitedRequests + 1, "one request, not split");
  assert.equal(w.receiver.counts.unique, 1100);
});

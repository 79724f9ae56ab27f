// Attempt classification and the internal retry loop, with faults injected at the receiver.
import { test } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { PermanentSinkError, RetryableSinkError } from "../../../src/sinks/sink.ts";
import { createLokiSink } from "../../../src/sinks/loki/sink.ts";
import { parseRetryAfter } from "../../../src/sinks/wire/retry-policy.ts";
import { startLokiReceiver } from "../../../src/sim/loki.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { entries, entry, harness, settings } from "./support.ts";

test("429 with Retry-After: the wait honours it, then the push succeeds", async (t) => {
  const { receiver, sink, clock } = await harness(t);
  receiver.faults.failNext(1, 429, { retryAfter: "7" });
  await sink.push(entries(3));
  assert.equal(receiver.counts.requests, 2);
  assert.equal(receiver.counts.unique, 3);
  assert.equal(clock.sleeps.length, 1);
  assert.ok(clock.sleeps[0]! >= 7000, `slept ${clock.sleeps[0]} ms`);
});

test("Retry-After is capped at 60 s and an HTTP date is ignored", async (t) => {
  const { receiver, sink, clock } = await harness(t);
  receiver.faults.failNext(1, 503, { retryAfter: "3600" });
  receiver.faults.failNext(1, 503, { retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT" });
  await sink.push(entries(1));
  assert.equal(clock.sleeps[0], 60_000);
  assert.ok(clock.sleeps[1]! >= 500 && clock.sleeps[1]! <= 2000, `backoff ${clock.sleeps[1]}`);
});

test("Retry-After parsing: delta-seconds with fractions, negative is 0, dates and garbage ignored", () => {
  assert.equal(parseRetryAfter("1.5"), 1500);
  assert.equal(parseRetryAfter(" 2 "), 2000);
  assert.equal(parseRetryAfter("-5"), 0);
  assert.equal(parseRetryAfter("61"), 60_000);
  assert.equal(parseRetryAfter(["4", "9"]), 4000);
  assert.equal(parseRetryAfter("Wed, 21 Oct 2015 07:28:00 GMT"), undefined);
  assert.equal(parseRetryAfter("soon"), undefined);
  assert.equal(parseRetryAfter(undefined), undefined);
});

test("5xx is retried with jittered backoff in [0.5 s, 2^(n-1) s], then succeeds", async (t) => {
  const { receiver, sink, clock } = await harness(t);
  receiver.faults.failNext(3, 500);
  await sink.push(entries(2));
  assert.equal(receiver.counts.requests, 4);
  assert.equal(receiver.counts.unique, 2);
  // ManualClock's random() is 0.5: midpoints of U(0.5,1), U(0.5,2), U(0.5,4).
  assert.deepEqual(clock.sleeps, [750, 1250, 2250]);
});

test("five transient failures raise RetryableSinkError carrying the last Retry-After", async (t) => {
  const { receiver, sink, clock } = await harness(t);
  receiver.faults.failNext(4, 502);
  receiver.faults.failNext(1, 429, { retryAfter: "2.5" });
  await assert.rejects(sink.push(entries(2)), (err: unknown) => {
    assert.ok(err instanceof RetryableSinkError);
    assert.equal(err.retryAfterMs, 2500);
    assert.match(err.message, /after 5 attempts.*HTTP 429/);
    return true;
  });
  assert.equal(receiver.counts.requests, 5);
  assert.equal(clock.sleeps.length, 4);
  assert.equal(receiver.counts.accepted, 0);
});

test("transport errors are transient too", async (t) => {
  const receiver = await startLokiReceiver();
  const url = receiver.pushUrl;
  await receiver.stop(); // nothing listens on the port any more
  const clock = new ManualClock();
  const sink = createLokiSink(settings(url), { clock });
  t.after(() => sink.close());
  await assert.rejects(sink.push(entries(1)), (err: unknown) => {
    assert.ok(err instanceof RetryableSinkError);
    assert.match(err.message, /transport error/);
    return true;
  });
  assert.equal(clock.sleeps.length, 4);
});

test("401 is Retryable at once, logged on the 1st and every 10th failure, then recovery is logged", async (t) => {
  const receiver = await startLokiReceiver();
  const lines: { level: number; msg: string; consecutiveFailures?: number }[] = [];
  const logger = pino(
    { level: "info" },
    { write: (s: string) => lines.push(JSON.parse(s) as (typeof lines)[number]) },
  );
  const clock = new ManualClock();
  const sink = createLokiSink(settings(receiver.pushUrl, { auth_token: "bad" }), { clock, logger });
  t.after(async () => {
    await sink.close();
    await receiver.stop();
  });
  receiver.faults.failNext(20, 401);
  for (let i = 0; i < 20; i++) {
    await assert.rejects(
      sink.push(entries(1)),
      (err: unknown) => err instanceof RetryableSinkError && /HTTP 401/.test(err.message),
    );
  }
  assert.equal(receiver.counts.requests, 20, "no internal retry on 401");
  assert.deepEqual(clock.sleeps, []);
  const errors = lines.filter((l) => l.level === 50);
  assert.deepEqual(
    errors.map((l) => l.consecutiveFailures),
    [1, 10, 20],
  );
  await sink.push(entries(1));
  const recovered = lines.filter((l) => l.level === 30 && /accepts pushes again/.test(l.msg));
  assert.equal(recovered.length, 1);
  assert.equal(recovered[0]!.consecutiveFailures, 20);
  assert.ok(!JSON.stringify(lines).includes("bad"), "the token never reaches the log");
});

test("403 and 404 are Retryable at once; an unknown status is Retryable too", async (t) => {
  const { receiver, sink, clock } = await harness(t);
  for (const status of [403, 404, 302, 418]) {
    receiver.faults.failNext(1, status);
    await assert.rejects(sink.push(entries(1)), RetryableSinkError);
  }
  assert.equal(receiver.counts.requests, 4);
  assert.deepEqual(clock.sleeps, []);
});

test("413 bisection isolates one poison entry in 16 and delivers the other 15", async (t) => {
  // The poison entry alone makes any body containing it exceed the receiver's limit.
  const { receiver, sink } = await harness(t, { batch: { max_line_bytes: 0 } }, { maxBodyBytes: 20_000 });
  const batch = entries(16);
  batch[11] = entry(11, { line: "P".repeat(30_000) });
  const result = await sink.push(batch);
  assert.equal(result.dropped.length, 1);
  assert.equal(result.dropped[0]!.reason, "oversized_413");
  assert.deepEqual(result.dropped[0]!.entries, [batch[11]]);
  assert.equal(receiver.counts.unique, 15);
  assert.equal(receiver.counts.duplicates, 0);
  const delivered = new Set(receiver.lines());
  for (const [i, e] of batch.entries()) assert.equal(delivered.has(e.line), i !== 11);
  // 16 → 8 → 4 → 2 → 1: one failed request per level plus the good halves.
  assert.equal(receiver.requests.filter((r) => r.status === 413).length, 5);
});

test("400 on poison lines drops each of them with reason bad_request", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.faults.rejectLinesContaining("POISON");
  const batch = entries(10);
  batch[0] = entry(0, { line: "POISON-a" });
  batch[7] = entry(7, { line: "b POISON" });
  const result = await sink.push(batch);
  // The body names no entry Loki knows how to name, so each poison entry is isolated by bisection
  // and keeps the words Loki refused it with (one group per distinct detail).
  assert.deepEqual(
    result.dropped.map((d) => [d.reason, d.entries.map((e) => e.line)]),
    [
      ["bad_request", ["POISON-a"]],
      ["bad_request", ["b POISON"]],
    ],
  );
  assert.match(result.dropped[0]!.detail ?? "", /poison marker/);
  const lines = new Set(receiver.lines());
  assert.equal(lines.size, 8);
  assert.ok(![...lines].some((l) => l.includes("POISON")));
});

test("a single-entry batch refused with 400 is Permanent(bad_request)", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.faults.failNext(1, 400, { body: "entry too far behind" });
  await assert.rejects(sink.push([entry(1)]), (err: unknown) => {
    assert.ok(err instanceof PermanentSinkError);
    assert.equal(err.reason, "bad_request");
    assert.match(err.message, /entry too far behind/);
    return true;
  });
  assert.equal(receiver.counts.requests, 1);
});

test("a retryable failure during bisection propagates at once", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.faults.failNext(1, 400);
  receiver.faults.failNext(1, 401);
  await assert.rejects(sink.push(entries(8)), RetryableSinkError);
  assert.equal(receiver.counts.requests, 2, "the second half is not attempted");
});

test("an aborted push is Retryable, not a crash", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.faults.stall();
  const ac = new AbortController();
  const pushing = sink.push(entries(2), ac.signal);
  while (receiver.faults.held === 0) await new Promise((r) => setImmediate(r));
  ac.abort();
  await assert.rejects(pushing, RetryableSinkError);
});

test("close() does not wait forever on a stalled request; the push fails retryable", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.faults.stall();
  const pushing = sink.push(entries(2));
  while (receiver.faults.held === 0) await new Promise((r) => setImmediate(r));
  await sink.close(); // ManualClock: the 5 s budget elapses at once, so the pool is destroyed
  await assert.rejects(pushing, RetryableSinkError);
  assert.equal(receiver.counts.accepted, 0);
});

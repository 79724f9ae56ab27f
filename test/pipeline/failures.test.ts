import { test } from "node:test";
import assert from "node:assert/strict";
import { ChannelSource, MemoryStore, ScriptedSource, entry, settle, waitUntil } from "../support/fakes.ts";
import { pino } from "pino";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { RetryableSinkError, type Sink } from "../../src/sinks/sink.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { harness, stalledStream } from "./harness.ts";
import { StateFileLockError, StateFenceError, StateStoreConflictError } from "../../src/state/errors.ts";

const KEY = "eventlogfile:API";

test("retryable failures back off 1 s doubling to a 30 s cap, forever, then deliver", async () => {
  const clock = new ManualClock({ auto: true });
  const src = new ScriptedSource("eventlogfile", [entry(KEY, "1")]);
  const h = harness([src], { clock });
  h.sink.script(...Array.from({ length: 7 }, () => ({ retryable: undefined })));
  await h.pipeline.run(new AbortController().signal);
  assert.deepEqual(
    clock.sleeps.filter((ms) => ms >= 1000),
    [1000, 2000, 4000, 8000, 16000, 30000, 30000],
  );
  assert.equal(h.sink.calls.length, 8);
  assert.equal(h.store.doc.get(KEY), "1");
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "retried" }), 7);
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "success" }), 1);
  const warns = h.logs.filter((l) => l.level === 40 && l.msg.startsWith("Loki push failed"));
  assert.deepEqual(
    warns.map((w) => w.attempt),
    [1],
    "warned on the first failure, rate-limited after",
  );
});

test("a push Loki keeps limiting (429) is warned about as a limit to raise, not as an unreachable Loki", async () => {
  const clock = new ManualClock({ auto: true });
  const h = harness([new ScriptedSource("eventlogfile", [entry(KEY, "1")])], { clock });
  const perStream =
    "Loki push to http://loki/loki/api/v1/push failed after 5 attempts (last: HTTP 429: Per stream rate " +
    "limit exceeded (limit: 3MB/sec) while attempting to ingest for stream '{a=\"b\"}' totaling 4MB)";
  h.sink.script({ error: new RetryableSinkError(perStream) }, { retryable: undefined });
  await h.pipeline.run(new AbortController().signal);
  const warns = h.logs.filter((l) => l.level === 40 && l.msg.startsWith("Loki push failed"));
  assert.equal(warns.length, 1);
  assert.match(warns[0]!.msg, /limiting this tenant or stream \(HTTP 429\).*per_stream_rate_limit/);
  assert.doesNotMatch(warns[0]!.msg, /reachable/);
  assert.equal(h.store.doc.get(KEY), "1");
});

test("a 429's retryAfterMs is honoured, capped at 60 s", async () => {
  const h = stalledStream({ batch: { max_entries: 1 } });
  const { src, stop, running } = h;
  src.emit(entry("pubsub:/event/A", "1"));
  await waitUntil(() => h.sink.calls.length === 1, "push");
  h.sink.calls[0]!.failRetryable(5000);
  await waitUntil(() => h.clock.sleeps.includes(5000), "wait of 5 s");
  h.clock.advance(4999);
  await settle(20);
  assert.equal(h.sink.calls.length, 1, "not before Retry-After");
  h.clock.advance(1);
  await waitUntil(() => h.sink.calls.length === 2, "retry after 5 s");
  h.sink.calls[1]!.failRetryable(3_600_000);
  await waitUntil(() => h.clock.sleeps.includes(60_000), "capped at 60 s");
  h.clock.advance(60_000);
  await waitUntil(() => h.sink.calls.length === 3, "retry after 60 s");
  h.sink.calls[2]!.succeed();
  await waitUntil(() => h.store.doc.get("pubsub:/event/A") === "1", "commit");
  stop.abort();
  await running;
});

test("a permanent refusal is counted per reason/source/event_type/org and the checkpoint moves on", async () => {
  const withOrg = { source: "eventlogfile", event_type: "API", org: "prod" };
  const noOrg = { source: "eventlogfile", event_type: "URI" };
  const items = [
    entry(KEY, "1", { labels: withOrg }),
    entry(KEY, "2", { labels: noOrg }),
    entry(KEY, "3", { labels: withOrg }),
  ];
  const h = harness([new ScriptedSource("eventlogfile", items)]);
  h.sink.script({ permanent: "oversized_413" });
  await h.pipeline.run(new AbortController().signal);
  assert.equal(h.store.doc.get(KEY), "3");
  const points = await h.points("sf2loki_loki_entries_dropped");
  const byAttrs = points.map((p) => [p.attributes, p.value]);
  assert.deepEqual(
    byAttrs.sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    [
      [{ reason: "oversized_413", source: "eventlogfile", event_type: "API", org: "prod" }, 2],
      [{ reason: "oversized_413", source: "eventlogfile", event_type: "URI" }, 1],
      // The series exported at 0 from start-up, so the drops alert has data on a healthy daemon.
      [{}, 0],
    ],
  );
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "success" }), 0);
  assert.equal(h.pipeline.sinkFailingSince(), undefined);
  assert.ok(h.logs.some((l) => l.level === 50 && l.reason === "oversized_413"));
});

test("entries a delivered push reports as dropped are counted, and the batch commits", async () => {
  const a = entry(KEY, "1");
  const b = entry(KEY, "2", { labels: { source: "eventlogfile", event_type: "Login" } });
  const h = harness([new ScriptedSource("eventlogfile", [a, b])]);
  h.sink.script({ ok: { dropped: [{ entries: [b], reason: "bad_request" }] } });
  await h.pipeline.run(new AbortController().signal);
  assert.equal(
    await h.metric("sf2loki_loki_entries_dropped", { reason: "bad_request", event_type: "Login" }),
    1,
  );
  assert.equal(await h.metric("sf2loki_loki_entries_dropped"), 1);
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "success" }), 1);
  assert.equal(h.store.doc.get(KEY), "2");
});

test("a retry sends only what no earlier attempt landed or had refused: no stored entry twice", async () => {
  const items = [1, 2, 3, 4, 5, 6].map((n) => entry(KEY, String(n)));
  const sent: string[][] = [];
  const sink: Sink = {
    push: (batch, _signal, onDropped, onLanded) => {
      sent.push(batch.map((e) => e.line));
      if (sent.length === 1) {
        // A split push: the first half stored, one entry refused for good, then a 503 on the rest.
        onLanded?.(batch.slice(0, 3));
        onDropped?.({ entries: [batch[3]!], reason: "bad_request" });
        return Promise.reject(new RetryableSinkError("HTTP 503"));
      }
      return Promise.resolve({ dropped: [] });
    },
    close: () => Promise.resolve(),
  };
  const pipeline = new Pipeline({
    sources: [new ScriptedSource("eventlogfile", items)],
    sink,
    store: new MemoryStore(),
    batch: { ...DEFAULT_BATCH_SETTINGS },
    clock: new ManualClock({ auto: true }),
  });
  await pipeline.run(new AbortController().signal);
  assert.deepEqual(sent, [items.map((e) => e.line), [items[4]!.line, items[5]!.line]]);
});

test("a fence refusal rejects run() with that error and cancels producers blocked on a full queue", async () => {
  const flood = new ScriptedSource("eventlog_objects", function* () {
    for (let i = 0; ; i++) yield entry("eventlog_objects:ApiEvent", String(i).padStart(9, "0"));
  });
  const h = harness([flood], { batch: { max_entries: 5, queue_maxsize: 10, max_in_flight: 1 } });
  h.sink.stall();
  const fenced = new StateFenceError("fenced");
  h.store.failNextCommit(fenced);
  const running = h.pipeline.run(new AbortController().signal);
  await waitUntil(() => h.sink.calls.length === 1, "push");
  await settle(10);
  h.sink.calls[0]!.succeed();
  await assert.rejects(running, (err) => err === fenced);
  const pulled = flood.pulled;
  await settle(20);
  assert.equal(flood.pulled, pulled, "the producer was cancelled");
  assert.equal(h.pipeline.status().running, false);
});

test("a fenced run lets go of every entry it held: its lanes report nothing queued, batching or in flight", async () => {
  const flood = new ScriptedSource("eventlog_objects", function* () {
    for (let i = 0; ; i++) yield entry("eventlog_objects:ApiEvent", String(i).padStart(9, "0"));
  });
  const h = harness([flood], { batch: { max_entries: 5, queue_maxsize: 10, max_in_flight: 1 } });
  h.sink.stall();
  h.store.failNextCommit(new StateFenceError("fenced"));
  const running = h.pipeline.run(new AbortController().signal);
  await waitUntil(() => h.sink.calls.length === 1, "push");
  // One batch pushing, the next built and waiting for the window, the queue full behind it.
  await waitUntil(() => h.pipeline.status().lanes.bulk?.queued_entries === 10, "a full queue");
  const held = h.pipeline.status().lanes.bulk!;
  assert.equal(held.batching_entries, 5, "a batch waits for the window");
  h.sink.calls[0]!.succeed();
  await assert.rejects(running, StateFenceError);
  // What a standby's /statusz shows until its next term: nothing of the last one.
  assert.deepEqual(h.pipeline.status().lanes.bulk, {
    queued_entries: 0,
    queued_bytes: 0,
    batching_entries: 0,
    in_flight: 0,
    awaiting_commit: 0,
    failing_since: null,
  });
});

test("a store outage never ends the run: the write is retried with backoff from a fresh read, then commits", async () => {
  const clock = new ManualClock({ auto: true });
  const src = new ScriptedSource("eventlogfile", [entry(KEY, "1"), entry(KEY, "2")]);
  const h = harness([src], { clock, batch: { max_entries: 1, max_in_flight: 1 } });
  h.store.failNextCommit(new Error("503 SlowDown from s3://b/k"), 6);
  await h.pipeline.run(new AbortController().signal);
  assert.equal(h.store.doc.get(KEY), "2", "everything held was committed once the store answered");
  assert.equal(h.store.commitAttempts, 8, "6 failures, then each batch's write");
  assert.deepEqual(
    clock.sleeps.filter((ms) => ms >= 1000),
    [1000, 2000, 4000, 8000, 16000, 30000],
    "1 s doubling to a 30 s cap",
  );
  assert.ok(h.store.resets >= 6, "each retry starts from a fresh read (the failed write may have landed)");
  const warns = h.logs.filter((l) => l.level === 40 && /checkpoint store write failed/.test(l.msg));
  assert.deepEqual(
    warns.map((w) => w.attempt),
    [1],
    "warned on the first failure, rate-limited after",
  );
});

for (const [what, err] of [
  ["a real second writer (conflict)", new StateStoreConflictError("lost a compare-and-swap race")],
  ["another process's file lock", new StateFileLockError("locked by pid 7", 7)],
] as const) {
  test(`${what} still ends the run: no retry can fix it`, async () => {
    const src = new ScriptedSource("eventlogfile", [entry(KEY, "1")]);
    const h = harness([src], { clock: new ManualClock({ auto: true }) });
    h.store.failNextCommit(err, 100);
    await assert.rejects(h.pipeline.run(new AbortController().signal), (e) => e === err);
    assert.equal(h.store.commitAttempts, 1);
  });
}

test("a source error rejects run() without hanging, even with a stalled sink", async () => {
  const boom = new Error("source bug");
  const broken = new ScriptedSource("apexlog", [entry("apexlog", "1")], { after: boom });
  const streaming = new ChannelSource("pubsub");
  const h = harness([broken, streaming]);
  h.sink.stall();
  streaming.emit(entry("pubsub:/event/A", "1"));
  await assert.rejects(h.pipeline.run(new AbortController().signal), (err) => err === boom);
  assert.deepEqual(h.store.commits, []);
});

test("an unclassified sink error rejects run() with it", async () => {
  const bug = new TypeError("sink bug");
  const h = harness([new ScriptedSource("apexlog", [entry("apexlog", "1")])]);
  h.sink.script({ error: bug });
  await assert.rejects(h.pipeline.run(new AbortController().signal), (err) => err === bug);
  assert.deepEqual(h.store.commits, []);
});

test("an AbortError a source throws after stop is a normal end", async () => {
  class AbortingSource extends ChannelSource {
    // eslint-disable-next-line require-yield -- fails before its first entry
    override async *events(): AsyncGenerator<never> {
      await Promise.resolve();
      const err = new Error("aborted");
      err.name = "AbortError";
      throw err;
    }
  }
  const h = harness([new AbortingSource("pubsub")]);
  const stop = new AbortController();
  stop.abort();
  await h.pipeline.run(stop.signal);
});

test("a batch refused entry by entry logs one line per reason, and repeats within a minute are folded into the next", async () => {
  const batches = [0, 1, 2].map((b) => [1, 2, 3, 4, 5].map((n) => entry(KEY, `${b}${n}`)));
  const clock = new ManualClock({ auto: true });
  let call = 0;
  const sink: Sink = {
    push: (batch, _signal, onDropped) => {
      // Loki names each entry with its own words (its timestamp in them): one group per entry.
      for (const e of batch)
        onDropped?.({ entries: [e], reason: "too_old", detail: `too old: ${e.timestampNs}` });
      if (++call === 3) clock.advance(61_000);
      return Promise.resolve({ dropped: [] });
    },
    close: () => Promise.resolve(),
  };
  const logs: { level: number; msg: string; entries?: number; since_last_line?: unknown }[] = [];
  const pipeline = new Pipeline({
    sources: [new ScriptedSource("eventlogfile", batches.flat())],
    sink,
    store: new MemoryStore(),
    batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 5, max_in_flight: 1, max_uncommitted: 1 },
    clock,
    logger: pino({ level: "info" }, { write: (l: string) => logs.push(JSON.parse(l) as never) }),
  });
  await pipeline.run(new AbortController().signal);
  const errors = logs.filter((l) => l.level === 50);
  assert.equal(errors.length, 2, "the first batch's line, then one after the minute (not 15 lines)");
  assert.equal(errors[0]!.entries, 5);
  assert.deepEqual(errors[1]!.since_last_line, { batches: 1, entries: 5 });
});

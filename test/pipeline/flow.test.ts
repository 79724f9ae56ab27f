import { test } from "node:test";
import assert from "node:assert/strict";
import { ChannelSource, ScriptedSource, entry, token, waitUntil } from "../support/fakes.ts";
import { harness } from "./harness.ts";

function pad(n: number): string {
  return String(n).padStart(6, "0");
}

test("a finite source is delivered in batches and its last value per key committed", async () => {
  const items = Array.from({ length: 25 }, (_, i) => entry("eventlog_objects:ApiEvent", pad(i)));
  const src = new ScriptedSource("eventlog_objects", items);
  const h = harness([src], { batch: { max_entries: 10 } });
  await h.pipeline.run(new AbortController().signal);
  assert.deepEqual(
    h.sink.calls.map((c) => c.entries.length),
    [10, 10, 5],
  );
  assert.equal(h.store.doc.get("eventlog_objects:ApiEvent"), pad(24));
  assert.deepEqual(h.store.history("eventlog_objects:ApiEvent").at(-1), pad(24));
  assert.equal(
    await h.metric("sf2loki_events_ingested", { source: "eventlog_objects", event_type: "ApiEvent" }),
    25,
  );
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "success" }), 3);
  assert.equal(await h.metric("sf2loki_ingest_lag_seconds", { source: "eventlog_objects" }), 25);
});

test("no sources: run() returns at once", async () => {
  const h = harness([]);
  await h.pipeline.run(new AbortController().signal);
  assert.equal(h.sink.calls.length, 0);
});

test("static labels win over entry labels; checkpoint-only tokens are neither labelled, counted nor pushed", async () => {
  const shared = { source: "eventlog_objects", event_type: "LoginEvent", job: "mine" };
  const a = entry("k", "1", { labels: shared });
  const b = entry("k", "2", { labels: shared });
  const t = token("k", "3");
  const src = new ScriptedSource("eventlog_objects", [a, t, b]);
  const h = harness([src], { staticLabels: { job: "sf2loki", service_name: "sf2loki" } });
  await h.pipeline.run(new AbortController().signal);
  const pushed = h.sink.calls.flatMap((c) => c.entries);
  assert.deepEqual(pushed, [a, b]);
  assert.deepEqual(a.labels, {
    source: "eventlog_objects",
    event_type: "LoginEvent",
    job: "sf2loki",
    service_name: "sf2loki",
  });
  assert.deepEqual(
    shared,
    { source: "eventlog_objects", event_type: "LoginEvent", job: "mine" },
    "source's object untouched",
  );
  assert.deepEqual(t.labels, {});
  assert.equal(await h.metric("sf2loki_events_ingested"), 2);
  assert.equal(h.store.doc.get("k"), "2");
});

test("entries with equal label sets leave the producer sharing one merged object; another set gets its own", async () => {
  // Sources build a fresh labels object per entry; the sink then groups the run by identity.
  const labelsOf = (type: string) => ({ source: "eventlog_objects", event_type: type });
  const entries = [
    entry("k", "1", { labels: labelsOf("ApiEvent") }),
    entry("k", "2", { labels: labelsOf("ApiEvent") }),
    entry("k", "3", { labels: labelsOf("LoginEvent") }),
    entry("k", "4", { labels: { event_type: "LoginEvent", source: "eventlog_objects" } }),
    entry("k", "5", { labels: labelsOf("ApiEvent") }),
  ];
  const h = harness([new ScriptedSource("eventlog_objects", entries)], { staticLabels: { job: "sf2loki" } });
  await h.pipeline.run(new AbortController().signal);
  const [a1, a2, l1, l2, a3] = h.sink.calls.flatMap((c) => c.entries);
  assert.equal(a1!.labels, a2!.labels, "a run of equal sets shares one object");
  assert.equal(l1!.labels, l2!.labels, "key order does not break a run");
  assert.notEqual(a1!.labels, l1!.labels);
  assert.deepEqual(a1!.labels, { source: "eventlog_objects", event_type: "ApiEvent", job: "sf2loki" });
  assert.deepEqual(l2!.labels, { event_type: "LoginEvent", source: "eventlog_objects", job: "sf2loki" });
  assert.deepEqual(a3!.labels, { source: "eventlog_objects", event_type: "ApiEvent", job: "sf2loki" });
});

test("flush_interval flushes a partial batch, timed from its first item", async () => {
  const src = new ChannelSource("pubsub");
  const h = harness([src], { batch: { max_entries: 100, flush_interval_ms: 1000 } });
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  src.emit(entry("pubsub:/event/A", "1"));
  await waitUntil(() => h.clock.sleeps.includes(1000), "deadline timer");
  h.clock.advance(600);
  src.emit(entry("pubsub:/event/A", "2"));
  h.clock.advance(399);
  await waitUntil(() => src.pulled === 2, "second entry pulled");
  assert.equal(h.sink.calls.length, 0, "no push before the interval");
  h.clock.advance(1);
  await waitUntil(() => h.sink.calls.length === 1, "flush at the deadline");
  assert.deepEqual(h.sink.calls[0]!.values, ["1", "2"]);
  await waitUntil(() => h.store.doc.get("pubsub:/event/A") === "2", "commit");
  stop.abort();
  await running;
});

test("max_bytes flushes once Σ(lineBytes + 64) reaches it", async () => {
  const line = "x".repeat(136); // 200 with overhead
  const items = Array.from({ length: 7 }, (_, i) => entry("k", pad(i), { line }));
  const h = harness([new ScriptedSource("apexlog", items)], { batch: { max_bytes: 600 } });
  await h.pipeline.run(new AbortController().signal);
  assert.deepEqual(
    h.sink.calls.map((c) => c.entries.length),
    [3, 3, 1],
  );
});

test("invalid batch settings are refused at construction with a config error", () => {
  assert.throws(() => harness([], { batch: { max_in_flight: 0 } }), { code: "SF2LOKI_CONFIG" });
  assert.throws(() => harness([], { batch: { max_in_flight: 8, max_uncommitted: 4 } }), {
    code: "SF2LOKI_CONFIG",
    message: /max_uncommitted is 4, below max_in_flight \(8\)/,
  });
  assert.throws(() => harness([], { batch: { queue_max_bytes: -1 } }), { code: "SF2LOKI_CONFIG" });
});

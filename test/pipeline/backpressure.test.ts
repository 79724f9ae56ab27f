import { test } from "node:test";
import assert from "node:assert/strict";
import { ChannelSource, ScriptedSource, entry, settle, waitUntil } from "../support/fakes.ts";
import type { LogEntry } from "../../src/model.ts";
import { entryCost, mapChars } from "../../src/pipeline/cost.ts";
import { harness } from "./harness.ts";

function flood(key: string, line: string): () => Iterable<LogEntry> {
  return function* () {
    for (let i = 0; ; i++) yield entry(key, String(i).padStart(9, "0"), { line });
  };
}

const BULK = "eventlog_objects:ApiEvent";

test("a stalled sink holds queued bytes at the budget and the producer stops pulling", async () => {
  const src = new ScriptedSource("eventlog_objects", flood(BULK, "y".repeat(936)));
  const budget = 20_000;
  const h = harness([src], {
    batch: { max_entries: 10, queue_max_bytes: budget, queue_maxsize: 1000, max_in_flight: 1 },
  });
  h.sink.stall();
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  await waitUntil(() => h.sink.calls.length === 1, "first push");
  await settle(30);
  const pulled = src.pulled;
  await settle(30);
  assert.equal(src.pulled, pulled, "the producer pulls nothing while the lane is full");

  const sample = entry(BULK, "000000000", { line: "y".repeat(936) });
  const cost = entryCost(sample, mapChars(sample.labels));
  const lane = h.pipeline.status().lanes.bulk!;
  assert.ok(lane.queued_bytes >= budget, `queue filled to the budget (${lane.queued_bytes})`);
  assert.ok(lane.queued_bytes <= budget + cost, `at most one entry over the budget (${lane.queued_bytes})`);
  const accounted = 10 + lane.batching_entries + lane.queued_entries;
  assert.ok(pulled - accounted <= 1, `pulled ${pulled}, accounted ${accounted}: at most one waits for room`);
  assert.ok(pulled < 60, `bounded pull (${pulled})`);
  assert.equal(lane.in_flight, 1);
  assert.equal(
    await h.metric("sf2loki_events_ingested", { source: "eventlog_objects" }),
    pulled,
    "ingest counts are exported while the lane is stuck",
  );
  assert.equal((await h.points("sf2loki_queue_depth"))[0]?.value, lane.queued_entries);

  h.sink.release();
  await waitUntil(() => src.pulled > pulled + 100, "flow resumes after release");
  stop.abort();
  await running;
  assert.equal(h.pipeline.status().lanes.bulk!.queued_bytes, 0, "every charge released");
});

test("count bound: queue_maxsize limits entries when bytes are unlimited", async () => {
  const src = new ScriptedSource("apexlog", flood("apexlog", "z"));
  const h = harness([src], {
    batch: { max_entries: 5, queue_max_bytes: 0, queue_maxsize: 7, max_in_flight: 1 },
  });
  h.sink.stall();
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  await waitUntil(() => h.sink.calls.length === 1, "first push");
  await settle(30);
  const lane = h.pipeline.status().lanes.bulk!;
  assert.equal(lane.queued_entries, 7);
  assert.ok(src.pulled <= 5 + 5 + 7 + 1, `pulled ${src.pulled}`);
  stop.abort();
  h.sink.release();
  await running;
});

test("lanes are independent: a stalled bulk lane does not hold back streaming", async () => {
  const bulk = new ScriptedSource("eventlogfile", flood("eventlogfile:API", "b".repeat(500)));
  const streaming = new ChannelSource("pubsub");
  const h = harness([bulk, streaming], {
    batch: { max_entries: 3, queue_max_bytes: 5_000, max_in_flight: 1 },
  });
  h.sink.holdIf = (entries) => entries[0]?.checkpoint.key === "eventlogfile:API";
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  await waitUntil(() => h.sink.calls.length === 1, "bulk push stalls");
  await settle(20);
  const bulkPulled = bulk.pulled;

  const labels = { source: "pubsub", event_type: "LoginEventStream" };
  streaming.emit(
    entry("pubsub:/event/LoginEventStream", "a", { labels }),
    entry("pubsub:/event/LoginEventStream", "b", { labels }),
    entry("pubsub:/event/LoginEventStream", "c", { labels }),
  );
  await waitUntil(() => h.store.doc.get("pubsub:/event/LoginEventStream") === "c", "streaming commits");
  assert.equal(h.store.doc.get("eventlogfile:API"), undefined, "bulk has committed nothing");
  assert.equal(bulk.pulled, bulkPulled, "bulk stays blocked");
  const status = h.pipeline.status();
  assert.ok(status.lanes.bulk!.queued_bytes >= 5_000);
  assert.equal(status.lanes.streaming!.queued_bytes, 0);

  h.sink.holdIf = undefined;
  stop.abort();
  for (const call of h.sink.pending()) call.succeed();
  await running;
});

test("a source yielding runs: a full lane stops the run mid-way, and every entry still arrives in order", async () => {
  const total = 95;
  const items = function* (): Generator<LogEntry> {
    for (let i = 0; i < total; i++) yield entry(BULK, String(i).padStart(9, "0"));
  };
  const src = new ScriptedSource("eventlog_objects", items, { runSize: 40 });
  const h = harness([src], {
    batch: { max_entries: 5, queue_max_bytes: 0, queue_maxsize: 7, max_in_flight: 1 },
  });
  h.sink.stall();
  const running = h.pipeline.run(new AbortController().signal);
  await waitUntil(() => h.sink.calls.length === 1, "first push");
  await settle(30);
  const lane = h.pipeline.status().lanes.bulk!;
  assert.equal(lane.queued_entries, 7, "the queue holds its bound, not the whole run of 40");
  assert.equal(
    lane.batching_entries + lane.queued_entries + 5,
    17,
    "the rest of the run waits at the producer",
  );
  h.sink.release();
  await running;
  const shipped = h.sink.calls.flatMap((c) => c.entries.map((e) => e.checkpoint.value));
  assert.deepEqual(
    shipped,
    Array.from({ length: total }, (_, i) => String(i).padStart(9, "0")),
  );
  assert.equal(h.store.doc.get(BULK), String(total - 1).padStart(9, "0"));
});

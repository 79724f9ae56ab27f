import { test } from "node:test";
import assert from "node:assert/strict";
import { ChannelSource, ScriptedSource, entry, settle, token, waitUntil } from "../support/fakes.ts";
import { harness, stalledStream } from "./harness.ts";

const A = "pubsub:/event/A";
const B = "pubsub:/event/B";

for (const maxInFlight of [1, 4]) {
  test(`#86, max_in_flight ${maxInFlight}: an abandoned batch's key is never committed later in the run`, async () => {
    const h = stalledStream({ batch: { max_entries: 1, max_in_flight: maxInFlight } });
    const { src, stop, running } = h;
    // batch 1: A1 (will be abandoned) · batch 2: token A2 · batch 3: A3 · batch 4: B1 · batch 5: A4 (permanent)
    src.emit(entry(A, "1"), token(A, "2"), entry(A, "3"), entry(B, "1"), entry(A, "4"));
    // 4 push slots take batches 1, 3, 4 and 5: the token's batch 2 has nothing to push and holds none.
    await waitUntil(() => h.sink.calls.length === (maxInFlight === 1 ? 1 : 4), "pushes");
    if (maxInFlight > 1) {
      // A3 and B1 are delivered before batch 1 fails: they must still not leapfrog it.
      h.sink.calls[1]!.succeed();
      h.sink.calls[2]!.succeed();
      await settle(20);
      assert.deepEqual(h.store.commits, []);
    }
    stop.abort();
    await settle(10);
    h.sink.calls[0]!.failRetryable();
    for (;;) {
      await settle(10);
      const pending = h.sink.pending();
      if (h.done() || pending.length === 0) break;
      for (const call of pending) {
        if (call.values.includes("4")) call.failPermanent("bad_request");
        else call.succeed();
      }
    }
    await running;
    assert.equal(h.sink.calls[0]!.values[0], "1");
    assert.equal(
      h.sink.calls.filter((c) => c.values.includes("1") && c.entries[0]!.checkpoint.key === A).length,
      1,
      "one attempt, no retry while stopping",
    );
    assert.equal(h.store.history(A).length, 0, `A never committed: ${JSON.stringify(h.store.commits)}`);
    assert.equal(h.store.doc.get(B), "1", "other keys still commit");
    assert.equal(await h.metric("sf2loki_pipeline_entries_abandoned", { reason: "shutdown" }), 1);
    assert.equal(
      await h.metric("sf2loki_loki_entries_dropped", { reason: "bad_request" }),
      1,
      "A4 was dropped",
    );
    assert.deepEqual(h.pipeline.status().abandoned_keys, [A]);
    const warn = h.logs.find((l) => l.level === 40 && Array.isArray(l.keys));
    assert.ok(warn, "abandonment warning logged");
    assert.deepEqual(warn.keys, [A]);
    assert.equal(warn.entries, 1);
  });
}

test("#86: a batch waiting out its backoff when stop fires is abandoned without another attempt", async () => {
  const h = stalledStream({ batch: { max_entries: 1, max_in_flight: 4 } });
  const { src, stop, running } = h;
  src.emit(entry(A, "1"), token(A, "2"));
  await waitUntil(() => h.sink.calls.length === 1, "push");
  h.sink.calls[0]!.failRetryable();
  await waitUntil(() => h.clock.sleeps.includes(1000), "backoff");
  stop.abort();
  await running;
  assert.equal(h.sink.calls.length, 1);
  assert.deepEqual(h.store.commits, []);
});

test("a healthy sink drains everything queued at stop and commits it", async () => {
  const h = stalledStream({ batch: { max_entries: 2 } });
  const { src, stop, running } = h;
  for (let i = 1; i <= 7; i++) src.emit(entry(A, String(i)));
  await waitUntil(() => h.sink.calls.length >= 1, "push");
  stop.abort();
  h.sink.release();
  await running;
  assert.equal(h.store.doc.get(A), "7");
  assert.equal(h.sink.deliveredValues.length, 7);
});

test("shutdown grace: a run that cannot drain is force-cancelled when the grace runs out", async () => {
  const flood = new ScriptedSource("eventlog_objects", function* () {
    for (let i = 0; ; i++) yield entry("eventlog_objects:ApiEvent", String(i).padStart(9, "0"));
  });
  const h = harness([flood], {
    graceMs: 5000,
    batch: { max_entries: 5, queue_maxsize: 10, max_in_flight: 2 },
  });
  h.sink.stall();
  const stop = new AbortController();
  let done = false;
  const running = h.pipeline.run(stop.signal).then(() => (done = true));
  await waitUntil(() => h.sink.calls.length === 2, "pushes stall");
  h.clock.advance(60_000); // time before the stop does not count
  stop.abort();
  h.clock.advance(4999);
  await settle(30);
  assert.equal(done, false, "still draining inside the grace");
  h.clock.advance(1);
  await running;
  assert.ok(
    h.sink.calls.every((c) => c.signal?.aborted === true),
    "in-flight pushes were aborted",
  );
  assert.deepEqual(h.store.commits, []);
  assert.ok(h.logs.some((l) => l.level === 40 && l.msg.startsWith("Shutdown grace expired")));
  assert.deepEqual(h.pipeline.status().abandoned_keys, ["eventlog_objects:ApiEvent"]);
  assert.ok((await h.metric("sf2loki_pipeline_entries_abandoned")) >= 10);
  const pulled = flood.pulled;
  await settle(20);
  assert.equal(flood.pulled, pulled, "the producer is gone");
});

test("shutdown grace: a sink that ignores cancellation cannot hang the run", async () => {
  const h = stalledStream({ graceMs: 1000, batch: { max_entries: 1 } });
  const { src, stop, running } = h;
  h.sink.honourAbort = false; // set before the first push: it reads this when called
  src.emit(entry(A, "1"));
  await waitUntil(() => h.sink.calls.length === 1, "push");
  stop.abort();
  h.clock.advance(1000);
  await settle(30);
  assert.equal(h.done(), false, "waits a bounded moment for the push to notice");
  h.clock.advance(1000);
  await running;
  h.sink.calls[0]!.succeed(); // a late answer changes nothing
  await settle(10);
  assert.deepEqual(h.store.commits, []);
});

test("a re-run after stop starts with empty queues and a fresh abandoned set", async () => {
  const src = new ChannelSource("pubsub");
  const h = harness([src], {
    graceMs: 1000,
    batch: { max_entries: 1, queue_max_bytes: 500, max_in_flight: 1 },
  });
  h.sink.stall();
  const first = new AbortController();
  const run1 = h.pipeline.run(first.signal);
  for (let i = 1; i <= 20; i++) src.emit(entry(A, String(i).padStart(2, "0"), { line: "q".repeat(100) }));
  await waitUntil(() => h.sink.calls.length === 1, "push");
  await settle(20);
  assert.ok(h.pipeline.status().lanes.streaming!.queued_bytes >= 500);
  first.abort();
  h.clock.advance(1000);
  await run1;
  assert.deepEqual(h.pipeline.status().abandoned_keys, [A]);

  h.sink.release();
  const second = new AbortController();
  const run2 = h.pipeline.run(second.signal);
  const fresh = h.pipeline.status();
  assert.equal(fresh.running, true);
  assert.equal(fresh.lanes.streaming!.queued_bytes, 0);
  assert.equal(fresh.lanes.streaming!.queued_entries, 0);
  assert.deepEqual(fresh.abandoned_keys, []);
  src.emit(entry(A, "99"));
  await waitUntil(() => h.store.doc.get(A) === "99", "the once-abandoned key commits in the new run");
  second.abort();
  await run2;
  assert.equal(h.pipeline.status().lanes.streaming!.queued_bytes, 0);
});

test("run() refuses to overlap itself; resetState() resets the store", async () => {
  const src = new ChannelSource("pubsub");
  const h = harness([src]);
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  await assert.rejects(h.pipeline.run(stop.signal), { code: "SF2LOKI_PIPELINE_BUSY" });
  stop.abort();
  await running;
  h.pipeline.resetState();
  assert.equal(h.store.resets, 1);
});

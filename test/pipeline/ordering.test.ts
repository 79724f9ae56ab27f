import { test } from "node:test";
import assert from "node:assert/strict";
import { entry, settle, token, waitUntil } from "../support/fakes.ts";
import { isMonotonic, stalledStream } from "./harness.ts";

const KEY = "pubsub:/event/LoginEventStream";
const pad = (n: number): string => String(n).padStart(4, "0");

test("max_in_flight 4: pushes overlap, commits land in batch order only", async () => {
  const h = stalledStream({ batch: { max_entries: 2, max_in_flight: 4 } });
  const { src, stop, running } = h;
  for (let i = 1; i <= 10; i++) src.emit(entry(KEY, pad(i)));
  src.emit(entry("pubsub:/event/Other", "x")); // batch 6, flushed by the drain at stop
  await waitUntil(() => h.sink.calls.length === 4, "four pushes in flight");
  await settle(20);
  assert.equal(h.sink.calls.length, 4, "the fifth batch waits for a window slot");
  assert.equal(h.pipeline.status().lanes.streaming!.in_flight, 4);

  const [b1, b2, b3, b4] = h.sink.calls;
  b4!.succeed();
  b3!.succeed();
  await settle(20);
  assert.deepEqual(h.store.commits, [], "batches 3 and 4 wait for 1 and 2");
  // Delivered, 3 and 4 wait for their commit without holding a push slot: batch 5 goes out.
  await waitUntil(() => h.sink.calls.length === 5, "a freed push slot admits batch 5");
  assert.equal(h.pipeline.status().lanes.streaming!.in_flight, 3);
  assert.equal(h.pipeline.status().lanes.streaming!.awaiting_commit, 2);

  b1!.succeed();
  await waitUntil(() => h.store.commits.length === 1, "batch 1 commits");
  assert.deepEqual(h.store.commits[0], { [KEY]: pad(2) });

  b2!.succeed();
  await waitUntil(() => h.store.commits.length === 2, "2, 3 and 4 commit together");
  assert.deepEqual(h.store.commits[1], { [KEY]: pad(8) });

  stop.abort();
  h.sink.release();
  await running;
  assert.equal(h.store.doc.get(KEY), pad(10));
  assert.equal(h.store.doc.get("pubsub:/event/Other"), "x");
  assert.ok(isMonotonic(h.store.history(KEY)), h.store.history(KEY).join(","));
});

test("a retryable failure of batch 2 holds the commits of 3 and 4 until it succeeds", async () => {
  const h = stalledStream({ batch: { max_entries: 2, max_in_flight: 4 } });
  const { src, stop, running } = h;
  for (let i = 1; i <= 8; i++) src.emit(entry(KEY, pad(i)));
  await waitUntil(() => h.sink.calls.length === 4, "four pushes");
  const [b1, b2, b3, b4] = h.sink.calls;
  b1!.succeed();
  b2!.failRetryable();
  b3!.succeed();
  b4!.succeed();
  await waitUntil(() => h.clock.sleeps.includes(1000), "backoff of 1 s");
  await settle(20);
  assert.deepEqual(h.store.commits, [{ [KEY]: pad(2) }]);
  assert.equal(h.pipeline.sinkFailingSince(), 0, "failing mark set at the failure (monotonic 0)");
  assert.notEqual(h.pipeline.status().lanes.streaming!.failing_since, null);
  assert.equal(await h.metric("sf2loki_loki_push", { outcome: "retried" }), 1);

  h.clock.advance(999);
  await settle(20);
  assert.equal(h.sink.calls.length, 4, "no retry before the backoff ends");
  h.clock.advance(1);
  await waitUntil(() => h.sink.calls.length === 5, "retry of batch 2");
  assert.deepEqual(h.sink.calls[4]!.values, [pad(3), pad(4)]);
  h.sink.calls[4]!.succeed();
  await waitUntil(() => h.store.commits.length === 2, "held commits released");
  assert.deepEqual(h.store.commits[1], { [KEY]: pad(8) });
  assert.equal(h.pipeline.sinkFailingSince(), undefined, "mark cleared by the success");
  stop.abort();
  await running;
});

test("checkpoint-only tokens never commit before the real entries queued ahead of them", async () => {
  for (const maxInFlight of [1, 4]) {
    const h = stalledStream({ batch: { max_entries: 1, max_in_flight: maxInFlight } });
    const { src, stop, running } = h;
    src.emit(entry(KEY, pad(1)), token(KEY, pad(2)), token(KEY, pad(3)));
    await waitUntil(() => h.sink.calls.length === 1, "push of the real entry");
    await settle(30);
    assert.deepEqual(h.store.commits, [], `max_in_flight ${maxInFlight}: tokens wait for the push`);
    h.sink.calls[0]!.succeed();
    await waitUntil(() => h.store.doc.get(KEY) === pad(3), "tokens commit after delivery");
    assert.ok(isMonotonic(h.store.history(KEY)));
    assert.equal(h.sink.calls.length, 1, "tokens never reach the sink");
    stop.abort();
    await running;
  }
});

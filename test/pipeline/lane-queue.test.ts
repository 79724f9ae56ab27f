import { test } from "node:test";
import assert from "node:assert/strict";
import { END_OF_STREAM, LaneQueue } from "../../src/pipeline/lane-queue.ts";
import { entry, settle, token } from "../support/fakes.ts";

test("admission waits until bytes are strictly below the budget, then charges the full cost", async () => {
  const q = new LaneQueue(100, 1000);
  assert.equal(q.tryPut(entry("k", "1"), 999), true);
  assert.equal(q.tryPut(entry("k", "2"), 5000), true, "999 < 1000: admitted, overshooting");
  assert.equal(q.bytes, 5999);
  assert.equal(q.tryPut(entry("k", "3"), 1), false, "at or over budget: refused");
  assert.equal(q.tryPut(token("k", "4"), 0), true, "checkpoint-only tokens cost nothing and never wait");
  assert.equal(q.tryPut(END_OF_STREAM, 0), true);

  let admitted = false;
  const waiting = q.put(entry("k", "5"), 10).then(() => (admitted = true));
  await settle(2);
  assert.equal(admitted, false);
  q.take(); // releases 999: 5000 still over the budget
  await settle(2);
  assert.equal(admitted, false);
  q.take(); // releases 5000: 0 < 1000
  await waiting;
  assert.equal(q.bytes, 10);
  assert.equal(q.size, 3);
});

test("a single entry larger than the whole budget is admitted once the lane is empty", () => {
  const q = new LaneQueue(10, 100);
  assert.equal(q.tryPut(entry("k", "1"), 10_000), true);
  assert.equal(q.tryPut(entry("k", "2"), 10_000), false);
  q.take();
  assert.equal(q.tryPut(entry("k", "2"), 10_000), true);
});

test("the count bound applies to everything, and 0 bytes disables byte admission", async () => {
  const q = new LaneQueue(2, 0);
  assert.equal(q.tryPut(entry("k", "1"), 1e9), true);
  assert.equal(q.tryPut(token("k", "2"), 0), true);
  assert.equal(q.tryPut(END_OF_STREAM, 0), false, "even a marker waits for a slot");
  let queued = false;
  const marker = q.put(END_OF_STREAM, 0).then(() => (queued = true));
  await settle(2);
  assert.equal(queued, false);
  assert.notEqual(q.take(), undefined);
  await marker;
  assert.equal(q.size, 2);
  q.take();
  assert.equal(q.take(), END_OF_STREAM);
});

test("a cancelled put charges nothing; the queue keeps working", async () => {
  const q = new LaneQueue(1, 0);
  q.tryPut(entry("k", "1"), 50);
  const ctl = new AbortController();
  const waiting = q.put(entry("k", "2"), 70, ctl.signal);
  ctl.abort(new Error("stop"));
  await assert.rejects(waiting, /stop/);
  assert.equal(q.bytes, 50);
  assert.equal(q.size, 1);
  q.take();
  assert.equal(q.bytes, 0);
  await q.put(entry("k", "3"), 30);
  assert.equal(q.bytes, 30);
});

test("the ring wraps and keeps FIFO order", () => {
  const q = new LaneQueue(3, 0);
  const seen: string[] = [];
  for (let i = 0; i < 10; i++) {
    assert.equal(q.tryPut(entry("k", String(i)), 1), true);
    if (q.size === 3) {
      const item = q.take();
      if (item !== undefined && item !== END_OF_STREAM) seen.push(item.checkpoint.value);
    }
  }
  for (let item = q.take(); item !== undefined; item = q.take()) {
    if (item !== END_OF_STREAM) seen.push(item.checkpoint.value);
  }
  assert.deepEqual(seen, ["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"]);
  assert.equal(q.bytes, 0);
});

test("cancel rejects waiting producers and wakes the consumer", async () => {
  const q = new LaneQueue(1, 0);
  q.tryPut(entry("k", "1"), 1);
  const waiting = q.put(entry("k", "2"), 1);
  const empty = new LaneQueue(1, 0);
  const consumer = empty.waitForItem();
  const reason = new Error("torn down");
  q.cancel(reason);
  empty.cancel(reason);
  await assert.rejects(waiting, (err) => err === reason);
  await consumer;
  assert.equal(q.tryPut(token("k", "3"), 0), false, "a cancelled queue admits nothing");
});

test("cancel lets go of what is queued, after queuedEntries() could count it", () => {
  const q = new LaneQueue(4, 0);
  q.tryPut(entry("k", "1"), 100);
  q.tryPut(token("k", "2"), 0);
  q.tryPut(entry("k", "3"), 50);
  assert.deepEqual(
    q.queuedEntries().map((e) => e.checkpoint.value),
    ["1", "2", "3"],
  );
  q.cancel(new Error("torn down"));
  assert.equal(q.size, 0);
  assert.equal(q.bytes, 0);
  assert.deepEqual(q.queuedEntries(), []);
  assert.equal(q.take(), undefined);
});

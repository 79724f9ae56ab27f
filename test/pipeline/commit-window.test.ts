// The commit window's two bounds: pushes Loki has not answered (max_in_flight), and batches pushed and
// not yet committed (max_uncommitted), the rest of which are delivered and wait for their checkpoint
// write holding only their checkpoints.
import { test } from "node:test";
import assert from "node:assert/strict";
import { metrics } from "@opentelemetry/api";
import pino from "pino";
import { PendingBatch } from "../../src/pipeline/batch.ts";
import { AbandonedKeys } from "../../src/pipeline/abandoned.ts";
import { OrderedCommitter } from "../../src/pipeline/committer.ts";
import { PipelineMetrics } from "../../src/pipeline/metrics.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { ChannelSource, MemoryStore, entry, settle, waitUntil } from "../support/fakes.ts";
import { harness } from "./harness.ts";

const KEY = "eventlogfile:API";
const pad = (n: number): string => String(n).padStart(4, "0");

/** A running bulk lane fed `entries` entries of one key (one per batch), whose store's writes hang. */
function hungStoreRun(entries: number, batch: { max_in_flight: number; max_uncommitted: number }) {
  const store = new MemoryStore();
  const releaseStore = store.holdCommits();
  const src = new ChannelSource("eventlogfile");
  const h = harness([src], { store, batch: { max_entries: 1, ...batch } });
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  for (let i = 1; i <= entries; i++) src.emit(entry(KEY, pad(i)));
  /** Lets the store answer and waits until every entry is committed, then stops the run. */
  const finish = async (): Promise<void> => {
    releaseStore();
    await waitUntil(() => store.doc.get(KEY) === pad(entries), "everything commits once the store answers");
    stop.abort();
    await running;
  };
  return { h, store, finish };
}

test("a slow store holds no push slot: Loki gets max_uncommitted batches while a write is in progress, then the lane waits", async () => {
  const { h, store, finish } = hungStoreRun(10, { max_in_flight: 2, max_uncommitted: 4 });
  // Batch 1's write hangs. With one shared window only batches 1 and 2 would have gone out.
  await waitUntil(() => h.sink.calls.length === 4, "four pushes while the first write hangs");
  await settle(30);
  assert.equal(h.sink.calls.length, 4, "then the lane waits: a store outage still stops it");
  assert.equal(store.commitAttempts, 1);
  assert.deepEqual(
    { in_flight: 0, awaiting_commit: 4 },
    (({ in_flight, awaiting_commit }) => ({ in_flight, awaiting_commit }))(h.pipeline.status().lanes.bulk!),
  );

  await finish();
  assert.equal(h.sink.deliveredValues.join(","), [...Array(10).keys()].map((i) => pad(i + 1)).join(","));
  const history = store.history(KEY);
  assert.equal(history[0], pad(1));
  assert.equal(history[1], pad(4), "batches 2-4, delivered while the store hung, commit in one write");
  assert.ok(
    history.every((v, i) => i === 0 || history[i - 1]! < v),
    history.join(","),
  );
});

test("max_uncommitted = max_in_flight: a delivered batch keeps its push slot until its checkpoint is written", async () => {
  const { h, finish } = hungStoreRun(4, { max_in_flight: 2, max_uncommitted: 2 });
  await waitUntil(() => h.sink.calls.length === 2, "two pushes");
  await settle(30);
  assert.equal(h.sink.calls.length, 2, "what a crash can re-deliver stays at 2 batches");
  await finish();
});

test("a delivered batch lets go of its entries and keeps their count; an abandoned one keeps them", async () => {
  const meter = metrics.getMeter("test");
  const logger = pino({ level: "silent" });
  const store = new MemoryStore();
  const releaseStore = store.holdCommits();
  const committer = new OrderedCommitter({
    store,
    clock: new ManualClock({ auto: true }),
    logger,
    abandoned: new AbandonedKeys(
      new PipelineMetrics(
        meter,
        () => 0,
        () => 0,
      ),
      logger,
    ),
    maxInFlight: 1,
    maxUncommitted: 2,
    onCommitted: () => undefined,
    onError: (err) => assert.fail(String(err)),
  });
  const first = new PendingBatch(0, [entry(KEY, "1"), entry(KEY, "2")]);
  const second = new PendingBatch(1, [entry(KEY, "3")]);
  await committer.admit(first);
  committer.settle(first, "ready");
  assert.equal(first.pushView.length, 0, "delivered: the entries are free while the write runs");
  assert.equal(first.entries, 2);

  await committer.admit(second); // a push slot is free although batch 0 is not committed yet
  committer.settle(second, "abandoned");
  assert.equal(second.pushView.length, 1, "abandoned: kept until the drain counts them");
  releaseStore();
  await committer.drained();
  assert.deepEqual(store.commits, [{ [KEY]: "2" }]);
});

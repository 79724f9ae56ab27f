// The failure-path series alerts read exist at 0 before anything failed (so a rule on them can be
// evaluated against a healthy daemon), count what they claim to, and the queue exports its bytes.
import { test } from "node:test";
import assert from "node:assert/strict";
import { StateFenceError } from "../../src/state/errors.ts";
import { ChannelSource, entry, settle, waitUntil } from "../support/fakes.ts";
import { harness, stalledStream } from "./harness.ts";

const KEY = "pubsub:/event/LoginEventStream";

test("dropped entries and checkpoint commit errors are exported at 0 from construction", async () => {
  const h = harness([new ChannelSource("pubsub")]);
  for (const name of ["sf2loki_loki_entries_dropped", "sf2loki_checkpoint_commit_errors"]) {
    const points = await h.points(name);
    assert.equal(points.length, 1, `${name} has its start-up series`);
    assert.equal(points[0]!.value, 0, name);
  }
});

/** One entry pushed and acknowledged, its commit failing with `err`; resolves with run()'s rejection. */
async function failedCommit(err: Error): Promise<{ rejected: unknown; commitErrors: number }> {
  const src = new ChannelSource("pubsub");
  const h = harness([src], { batch: { max_entries: 1 } });
  h.store.failNextCommit(err);
  const running = h.pipeline.run(new AbortController().signal);
  src.emit(entry(KEY, "1"));
  let rejected: unknown;
  await running.catch((e: unknown) => {
    rejected = e;
  });
  return { rejected, commitErrors: await h.metric("sf2loki_checkpoint_commit_errors") };
}

test("a failed checkpoint write counts one commit error; a fence (a demotion) counts none", async () => {
  const broken = new Error("disk full");
  const failed = await failedCommit(broken);
  assert.equal(failed.rejected, broken, "the run stops with the store's error");
  assert.equal(failed.commitErrors, 1);

  const fence = new StateFenceError("another replica leads");
  const fenced = await failedCommit(fence);
  assert.equal(fenced.rejected, fence);
  assert.equal(fenced.commitErrors, 0);
});

test("sf2loki_queue_bytes is the line bytes queued across lanes", async () => {
  const r = stalledStream({ batch: { max_entries: 1, max_in_flight: 1 } });
  assert.equal(await r.metric("sf2loki_queue_bytes"), 0);
  const line = '{"v":"x"}';
  // The first entries go into the stalled push and the next batch; the rest stay queued.
  for (let i = 1; i <= 10; i++) r.src.emit(entry(KEY, String(i), { line }));
  await waitUntil(() => r.sink.calls.length === 1, "the first push");
  await settle(20);
  const queued = (await r.points("sf2loki_queue_bytes"))[0]?.value;
  const depth = (await r.points("sf2loki_queue_depth"))[0]?.value;
  assert.equal(typeof depth, "number");
  assert.ok((depth as number) >= 5, `queue depth ${String(depth)}`);
  // Each queued entry costs at least its line's UTF-8 bytes.
  assert.ok(
    (queued as number) >= (depth as number) * Buffer.byteLength(line),
    `queue bytes ${String(queued)}`,
  );
  // Drain: the stream ends and every push is acknowledged.
  r.src.end();
  while (!r.done()) {
    for (const call of r.sink.pending()) call.succeed();
    await settle(10);
  }
  await r.running;
  assert.equal(await r.metric("sf2loki_queue_bytes"), 0);
});

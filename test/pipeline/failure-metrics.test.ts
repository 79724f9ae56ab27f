// The drop counter alerts read exists at 0 before anything was dropped (so a rule on it can be
// evaluated against a healthy daemon), and the queue exports its bytes next to its depth.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ChannelSource, entry, settle, waitUntil } from "../support/fakes.ts";
import { harness, stalledStream } from "./harness.ts";

const KEY = "pubsub:/event/LoginEventStream";

test("dropped entries are exported at 0 from construction", async () => {
  const h = harness([new ChannelSource("pubsub")]);
  const points = await h.points("sf2loki_loki_entries_dropped");
  assert.equal(points.length, 1, "the start-up series");
  assert.equal(points[0]!.value, 0);
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

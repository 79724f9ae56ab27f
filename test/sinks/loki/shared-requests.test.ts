// Streams share a request only where Loki cannot refuse one unseen (#37), against the simulated Loki
// whose ingester, like Loki 3.4.6's, answers a push with its last stream's result.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../../src/model.ts";
import { LOKI_DEFAULT_LIMITS } from "../../../src/sinks/receiving-loki/limits.ts";
import { harness } from "./support.ts";

const NOW_MS = Date.UTC(2026, 11, 1, 12);
const MS = 1_000_000n;
const HOUR_MS = 3_600_000;
const limits = { ...LOKI_DEFAULT_LIMITS, enabled: false };

function entries(topic: string, fromMs: number, n: number, tag = ""): LogEntry[] {
  return Array.from(
    { length: n },
    (_, i) =>
      new LogEntry({
        timestampNs: BigInt(fromMs + i) * MS,
        labels: { job: "sf2loki", source: "pubsub", event_type: topic },
        line: `${topic}-${fromMs + i}${tag}`,
        checkpoint: { key: topic, value: String(i) },
      }),
  );
}

test("live streams Loki accepted go in one request; each first push went alone", async (t) => {
  const { receiver, sink } = await harness(t, { limits }, { outOfOrderWindowMs: HOUR_MS, now: () => NOW_MS });
  const topics = ["A", "B", "C"];
  const first = topics.flatMap((topic) => entries(topic, NOW_MS - 10_000, 5));
  assert.deepEqual((await sink.push(first)).dropped, []);
  assert.deepEqual(
    receiver.requests.map((r) => r.streams),
    [1, 1, 1],
    "unknown streams, one request each",
  );
  const second = topics.flatMap((topic) => entries(topic, NOW_MS - 5_000, 5));
  assert.deepEqual((await sink.push(second)).dropped, []);
  assert.deepEqual(
    receiver.requests.slice(3).map((r) => r.streams),
    [3],
    "one request for all three",
  );
  assert.equal(receiver.counts.accepted, 30);
  assert.equal(receiver.counts.duplicates, 0);
});

test("a known stream's entries behind what Loki accepted of it go alone: the refusal is read, the fresh stream stored once", async (t) => {
  const { receiver, sink } = await harness(t, { limits }, { outOfOrderWindowMs: HOUR_MS, now: () => NOW_MS });
  await sink.push([...entries("Behind", NOW_MS - 1000, 3), ...entries("Fresh", NOW_MS - 1000, 3)]);
  const before = receiver.requests.length;
  // Two hours behind Behind's newest: Loki's ingester refuses it. Shared with Fresh (last), the
  // refusal would be answered 204 and lost.
  const late = entries("Behind", NOW_MS - 2 * HOUR_MS, 4, " late");
  const fresh = entries("Fresh", NOW_MS - 500, 4);
  const result = await sink.push([...late, ...fresh]);
  assert.deepEqual(
    receiver.requests.slice(before).map((r) => r.streams),
    [1, 1],
    "each stream alone",
  );
  assert.deepEqual(new Set(result.dropped.flatMap((g) => g.entries)), new Set(late));
  assert.ok(result.dropped.every((g) => g.reason === "too_far_behind"));
  const stored = new Set(receiver.lines({ event_type: "Fresh" }));
  for (const e of fresh) assert.ok(stored.has(e.line), `${e.line} stored`);
  // Refused once, Behind goes alone even with fresh entries until Loki accepts it again.
  const next = before + 2;
  await sink.push([...entries("Behind", NOW_MS, 2), ...entries("Fresh", NOW_MS, 2)]);
  assert.deepEqual(
    receiver.requests.slice(next).map((r) => r.streams),
    [1, 1],
  );
  await sink.push([...entries("Behind", NOW_MS + 10, 2), ...entries("Fresh", NOW_MS + 10, 2)]);
  assert.deepEqual(
    receiver.requests.slice(next + 2).map((r) => r.streams),
    [2],
  );
});

test("per_stream_rate_limit 0: every stream always goes alone", async (t) => {
  const { receiver, sink } = await harness(
    t,
    { limits: { ...limits, per_stream_rate_limit: 0 } },
    { outOfOrderWindowMs: HOUR_MS, now: () => NOW_MS },
  );
  for (let round = 0; round < 3; round++)
    await sink.push([...entries("A", NOW_MS + round * 10, 2), ...entries("B", NOW_MS + round * 10, 2)]);
  assert.deepEqual(
    receiver.requests.map((r) => r.streams),
    [1, 1, 1, 1, 1, 1],
  );
});

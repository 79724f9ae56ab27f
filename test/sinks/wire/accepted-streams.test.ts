// Which streams share a request (#37): only those Loki's ingester cannot refuse unseen.
import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../../src/model.ts";
import { LOKI_DEFAULT_LIMITS } from "../../../src/sinks/receiving-loki/limits.ts";
import {
  AcceptedStreams,
  ACCEPTED_FRESH_MS,
  type PushStream,
} from "../../../src/sinks/wire/accepted-streams.ts";
import { ManualClock } from "../../../src/util/clock.ts";

const T0 = 1_767_225_600_000_000_000n;

function stream(name: string, from: number, n = 3, lineBytes = 10): PushStream {
  return {
    labels: `{event_type="${name}"}`,
    entries: Array.from(
      { length: n },
      (_, i) =>
        new LogEntry({
          timestampNs: T0 + BigInt(from + i),
          labels: { event_type: name },
          line: "x".repeat(lineBytes),
          checkpoint: { key: name, value: String(from + i) },
        }),
    ),
  };
}

const names = (plan: PushStream[][]): string[][] =>
  plan.map((r) => r.map((s) => /"(.*)"/.exec(s.labels)![1]!));

test("a stream Loki has not accepted from this process goes alone; accepted ones share one request", () => {
  const clock = new ManualClock();
  const accepted = new AcceptedStreams(clock, LOKI_DEFAULT_LIMITS);
  assert.deepEqual(names(accepted.plan([stream("A", 0), stream("B", 0), stream("C", 0)])), [
    ["A"],
    ["B"],
    ["C"],
  ]);
  accepted.accepted(stream("A", 0));
  accepted.accepted(stream("B", 0));
  assert.deepEqual(names(accepted.plan([stream("A", 3), stream("C", 3), stream("B", 3)])), [
    ["A", "B"],
    ["C"],
  ]);
});

test("an entry older than the newest Loki accepted of its stream sends the stream alone", () => {
  const clock = new ManualClock();
  const accepted = new AcceptedStreams(clock, LOKI_DEFAULT_LIMITS);
  accepted.accepted(stream("A", 10));
  accepted.accepted(stream("B", 10));
  // A's newest accepted is T0+12: an entry at T0+11 could be behind what Loki holds.
  assert.deepEqual(names(accepted.plan([stream("A", 11), stream("B", 12)])), [["B"], ["A"]]);
  assert.deepEqual(names(accepted.plan([stream("A", 12), stream("B", 12)])), [["A", "B"]]);
});

test("a stream refused or failed is forgotten, and one accepted too long ago is unknown again", () => {
  const clock = new ManualClock();
  const accepted = new AcceptedStreams(clock, LOKI_DEFAULT_LIMITS);
  for (const n of ["A", "B", "C"]) accepted.accepted(stream(n, 0));
  accepted.forget(stream("B", 0));
  assert.deepEqual(names(accepted.plan([stream("A", 3), stream("B", 3), stream("C", 3)])), [
    ["A", "C"],
    ["B"],
  ]);
  clock.advance(ACCEPTED_FRESH_MS + 1);
  assert.deepEqual(names(accepted.plan([stream("A", 6), stream("C", 6)])), [["A"], ["C"]]);
  assert.equal(accepted.size, 0, "the stale ones are dropped, not kept forever");
});

test("a stream past half of Loki's per-stream rate or burst goes alone until its bucket refills", () => {
  const clock = new ManualClock();
  // 1 000 B/s, burst 4 000 B: the mirror allows 500 B/s and 2 000 B.
  const accepted = new AcceptedStreams(clock, {
    per_stream_rate_limit: 1000,
    per_stream_rate_limit_burst: 4000,
  });
  accepted.accepted(stream("A", 0, 1, 10));
  accepted.accepted(stream("B", 0, 1, 10));
  // 1 500 bytes of A: inside the mirrored burst (2 000 less the 10 first charged).
  assert.deepEqual(names(accepted.plan([stream("A", 1, 1, 1500), stream("B", 1)])), [["A", "B"]]);
  // 1 000 more: the mirrored bucket holds under 500, so A goes alone (Loki's own 429 is then its own).
  assert.deepEqual(names(accepted.plan([stream("A", 2, 1, 1000), stream("B", 2)])), [["B"], ["A"]]);
  clock.advance(4000); // 500 B/s x 4 s refills the mirror to its 2 000
  assert.deepEqual(names(accepted.plan([stream("A", 3, 1, 1000), stream("B", 3)])), [["A", "B"]]);
});

test("per_stream_rate_limit 0: every stream goes alone", () => {
  const clock = new ManualClock();
  const accepted = new AcceptedStreams(clock, { per_stream_rate_limit: 0, per_stream_rate_limit_burst: 0 });
  accepted.accepted(stream("A", 0));
  accepted.accepted(stream("B", 0));
  assert.deepEqual(names(accepted.plan([stream("A", 3), stream("B", 3)])), [["A"], ["B"]]);
});

// Loki's partial success against the simulated Loki, which (like Loki's distributor) stores the
// valid entries of a push and answers 400 naming the rest. Clocks are manual on both sides: the
// receiver's "now" is the sink's. The receiver records every push, so re-sent entries show up as
// duplicates and extra requests as requests.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import { LogEntry } from "../../../src/model.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { silentLogger } from "../../../src/obs/logger.ts";
import { createLokiSink, type LokiSink } from "../../../src/sinks/loki/sink.ts";
import { ISOLATION_BUDGET } from "../../../src/sinks/receiving-loki/prepare.ts";
import { LOKI_DEFAULT_LIMITS } from "../../../src/sinks/receiving-loki/limits.ts";
import type { DroppedEntries, Sink } from "../../../src/sinks/sink.ts";
import { startLokiReceiver, type LokiReceiver, type LokiReceiverOptions } from "../../../src/sim/loki.ts";
import { PendingBatch } from "../../../src/pipeline/batch.ts";
import { PipelineMetrics } from "../../../src/pipeline/metrics.ts";
import { pushBatch } from "../../../src/pipeline/push.ts";
import { RefusalLog } from "../../../src/pipeline/refusal-log.ts";
import { DeadLetterKeeper } from "../../../src/deadletter/keeper.ts";
import { FileDeadLetterStore } from "../../../src/deadletter/file-store.ts";
import { join } from "node:path";
import { tempDir } from "../../support/tmp.ts";
import { settings } from "./support.ts";

const NOW_MS = Date.UTC(2026, 11, 1, 12);
const MS = 1_000_000n;
const DAY_MS = 86_400_000;
const WEEK_MS = 7 * DAY_MS;

interface World {
  clock: ManualClock;
  receiver: LokiReceiver;
  sink: LokiSink;
}

async function world(
  t: TestContext,
  local: boolean,
  receiverOpts: LokiReceiverOptions = {},
  maxLineBytes = 262_144,
): Promise<World> {
  const clock = new ManualClock({ startMs: NOW_MS });
  const receiver = await startLokiReceiver({
    now: () => clock.now(),
    rejectOldSamplesMaxAgeMs: WEEK_MS,
    creationGracePeriodMs: 10 * 60_000,
    ...receiverOpts,
  });
  t.after(() => receiver.stop());
  const limits = { ...LOKI_DEFAULT_LIMITS, enabled: local };
  const sink = createLokiSink(
    settings(receiver.pushUrl, { limits, batch: { max_line_bytes: maxLineBytes } }),
    {
      clock,
    },
  );
  t.after(() => sink.close());
  return { clock, receiver, sink };
}

const EVENT_TYPES = ["LoginEventStream", "ApiEventStream"];

/** Entry i of a steady stream an hour old; `old` ones are eight days old (past Loki's week). */
function streamEntry(i: number, old: boolean): LogEntry {
  const tsMs = old ? NOW_MS - 8 * DAY_MS + i : NOW_MS - 3_600_000 + i;
  return new LogEntry({
    timestampNs: BigInt(tsMs) * MS + 123n,
    labels: { job: "sf2loki", source: "pubsub", event_type: EVENT_TYPES[i % 2]! },
    line: `{"EventIdentifier":"ev-${i}"}`,
    structuredMetadata: { level: "info" },
    checkpoint: { key: "pubsub:/event/x", value: String(i) },
  });
}

/** 20 batches of 100 entries, 1 % of them (one per batch, at varying positions) too old. */
function onePercentTooOld(): { batches: LogEntry[][]; old: Set<LogEntry> } {
  const batches: LogEntry[][] = [];
  const old = new Set<LogEntry>();
  for (let b = 0; b < 20; b++) {
    const batch: LogEntry[] = [];
    for (let j = 0; j < 100; j++) {
      const i = b * 100 + j;
      const e = streamEntry(i, j === (b * 37) % 100);
      if (j === (b * 37) % 100) old.add(e);
      batch.push(e);
    }
    batches.push(batch);
  }
  return { batches, old };
}

for (const local of [false, true]) {
  test(`1 % too old, local validation ${local ? "ON" : "OFF"}: one push per stream of a batch, nothing re-sent, every refusal dropped with its words`, async (t) => {
    const { receiver, sink } = await world(t, local);
    const { batches, old } = onePercentTooOld();
    const told: DroppedEntries[] = [];
    const returned: DroppedEntries[] = [];
    for (const batch of batches) {
      const result = await sink.push(batch, undefined, (g) => told.push(g));
      returned.push(...result.dropped);
    }
    // Two streams a batch (EVENT_TYPES), each in a request of its own (wire/per-stream.ts).
    assert.ok(
      receiver.counts.requests <= 1.1 * 2 * batches.length,
      `${receiver.counts.requests} pushes for ${batches.length} batches`,
    );
    assert.equal(receiver.counts.duplicates, 0, "no stored entry was sent again");
    assert.equal(receiver.counts.unique, 2000 - old.size);
    const droppedEntries = returned.flatMap((g) => g.entries);
    assert.deepEqual(new Set(droppedEntries), old);
    assert.equal(droppedEntries.length, old.size, "each refused entry dropped once");
    assert.deepEqual(new Set(told.flatMap((g) => g.entries)), old, "each drop told as it happened");
    for (const g of returned) {
      assert.equal(g.reason, "too_old");
      if (local) {
        assert.match(g.detail ?? "", /^reject_old_samples_max_age 168h: older than 2026-11-24T11:59:00Z/);
      } else {
        // Loki's own words, naming the stream and the entry's second.
        assert.equal(g.entries.length, 1);
        const e = g.entries[0]!;
        const sec = new Date(Number(e.timestampNs / MS)).toISOString().replace(/\.\d+Z$/, "Z");
        assert.equal(
          g.detail,
          `entry for stream '{event_type="${e.labels.event_type}", job="sf2loki", source="pubsub"}' has ` +
            `timestamp too old: ${sec}, oldest acceptable timestamp is: 2026-11-24T12:00:00Z`,
        );
      }
    }
    const refusedRequests = receiver.requests.filter((r) => r.status === 400).length;
    assert.equal(refusedRequests, local ? 0 : batches.length);
  });
}

test("several too-old entries in one second: Loki's grouped count picks the oldest of them", async (t) => {
  const { receiver, sink } = await world(t, false);
  // The cut-off falls inside a second: entries 0..2 are before it, 3..5 after.
  const cutMs = NOW_MS - WEEK_MS;
  const labels = { job: "sf2loki", source: "pubsub", event_type: "X" };
  const mk = (offsetMs: number, i: number): LogEntry =>
    new LogEntry({
      timestampNs: BigInt(cutMs + offsetMs) * MS,
      labels,
      line: `line ${i}`,
      checkpoint: { key: "k", value: String(i) },
    });
  const batch = [mk(-300, 0), mk(200, 3), mk(-200, 1), mk(300, 4), mk(-100, 2), mk(400, 5)];
  // Align the cut-off inside one second so the grouped message covers entries on both sides of it.
  assert.equal(cutMs % 1000, 0);
  const result = await sink.push(batch);
  assert.deepEqual(result.dropped.flatMap((g) => g.entries.map((e) => e.line)).sort(), [
    "line 0",
    "line 1",
    "line 2",
  ]);
  assert.equal(receiver.counts.requests, 1);
  assert.equal(receiver.counts.duplicates, 0);
  assert.deepEqual(receiver.lines().sort(), ["line 3", "line 4", "line 5"]);
});

test("Loki's other per-entry refusals are read too: line size, metadata, label limits, the future", async (t) => {
  const { receiver, sink } = await world(t, false, { maxLineBytes: 1000 }, 0);
  const base = (i: number, over: Partial<ConstructorParameters<typeof LogEntry>[0]> = {}): LogEntry =>
    new LogEntry({
      timestampNs: BigInt(NOW_MS - 60_000 + i) * MS,
      labels: { job: "sf2loki", source: "pubsub", event_type: "X" },
      line: `ok ${i}`,
      structuredMetadata: { level: "info" },
      checkpoint: { key: "k", value: String(i) },
      ...over,
    });
  const manyLabels = Object.fromEntries(Array.from({ length: 16 }, (_, k) => [`l${k}`, "v"]));
  const batch = [
    base(0),
    base(1, { line: "x".repeat(1001) }),
    base(2, { structuredMetadata: { big: "y".repeat(70_000) } }),
    base(3, { timestampNs: BigInt(NOW_MS + 3_600_000) * MS }),
    base(4, { labels: manyLabels }),
    base(5),
  ];
  const result = await sink.push(batch);
  const byReason = new Map(result.dropped.map((g) => [g.reason, g.entries]));
  assert.deepEqual(byReason.get("line_too_long"), [batch[1]]);
  assert.deepEqual(byReason.get("metadata_too_large"), [batch[2]]);
  assert.deepEqual(byReason.get("too_far_in_future"), [batch[3]]);
  assert.deepEqual(byReason.get("label_limits"), [batch[4]]);
  assert.equal(receiver.counts.requests, 2, "one a stream: the many-label entry is a stream of its own");
  assert.equal(receiver.counts.duplicates, 0);
  assert.deepEqual(receiver.lines().sort(), ["ok 0", "ok 5"]);
});

test("the same limits checked locally refuse the same entries without a request", async (t) => {
  const { receiver, sink } = await world(t, true);
  const e = (i: number, over: Partial<ConstructorParameters<typeof LogEntry>[0]> = {}): LogEntry =>
    new LogEntry({
      timestampNs: BigInt(NOW_MS - 60_000 + i) * MS,
      labels: { job: "sf2loki", source: "pubsub", event_type: "X" },
      line: `ok ${i}`,
      checkpoint: { key: "k", value: String(i) },
      ...over,
    });
  const batch = [
    e(0, { structuredMetadata: { big: "y".repeat(70_000) } }),
    e(1, { timestampNs: BigInt(NOW_MS + 3_600_000) * MS }),
    e(2, { labels: { job: "a", v: "z".repeat(3000) } }),
    e(3),
  ];
  const result = await sink.push(batch);
  assert.deepEqual(
    result.dropped.map((g) => [g.reason, g.detail?.split(":")[0]]),
    [
      ["metadata_too_large", "max_structured_metadata_size 65536"],
      ["too_far_in_future", "creation_grace_period 10m"],
      ["label_limits", "max_label_value_length 2048"],
    ],
  );
  assert.equal(receiver.counts.requests, 1);
  assert.equal(receiver.requests[0]!.status, 204);
});

test("an ingester's out-of-order list cut at 10: the rest of that stream is pushed again until named", async (t) => {
  const { receiver, sink } = await world(t, false, { outOfOrderWindowMs: 60_000 });
  const labels = { job: "sf2loki", source: "eventlogfile", event_type: "Login" };
  const mk = (tsMs: number, i: number): LogEntry =>
    new LogEntry({
      timestampNs: BigInt(tsMs) * MS,
      labels,
      line: `l${i}`,
      checkpoint: { key: "k", value: "v" },
    });
  await sink.push([mk(NOW_MS - 1000, -1)]);
  // 25 entries an hour behind the stream's newest, among 50 recent ones.
  const behind = Array.from({ length: 25 }, (_, i) => mk(NOW_MS - 3_600_000 + i, i));
  const recent = Array.from({ length: 50 }, (_, i) => mk(NOW_MS - 500 + i, 100 + i));
  const batch = [...recent.slice(0, 25), ...behind, ...recent.slice(25)];
  const result = await sink.push(batch);
  const dropped = result.dropped.flatMap((g) => g.entries);
  assert.deepEqual(new Set(dropped), new Set(behind));
  assert.ok(
    result.dropped.every((g) => g.reason === "too_far_behind" && /entry too far behind/.test(g.detail!)),
  );
  // 25 refused, 10 named per answer: 3 requests; the recent entries (after the cut-off) never re-sent.
  assert.equal(receiver.counts.requests, 1 + 3);
  assert.equal(receiver.counts.duplicates, 0);
  assert.equal(receiver.counts.unique, 51);
});

test("a stream refused as too far behind is named even when a later stream of the batch is stored (Loki 3.4.6 answers such a push 204)", async (t) => {
  const { receiver, sink } = await world(t, false, { outOfOrderWindowMs: 60_000 });
  const stream = (event_type: string) => ({ job: "sf2loki", source: "eventlogfile", event_type });
  const mk = (labels: ReturnType<typeof stream>, tsMs: number, i: number): LogEntry =>
    new LogEntry({
      timestampNs: BigInt(tsMs) * MS,
      labels,
      line: `l${i}`,
      checkpoint: { key: "k", value: "v" },
    });
  const login = stream("Login");
  const api = stream("API");
  await sink.push([mk(login, NOW_MS - 1000, -1)]);
  // Login's entries are an hour behind what Loki holds of Login; API's are new. One request of both
  // would be answered 204 and Login's 5 lost with nobody told.
  const behind = Array.from({ length: 5 }, (_, i) => mk(login, NOW_MS - 3_600_000 + i, i));
  const fresh = Array.from({ length: 5 }, (_, i) => mk(api, NOW_MS - 500 + i, 100 + i));
  const landed: LogEntry[] = [];
  const result = await sink.push([...behind, ...fresh], undefined, undefined, (l) => landed.push(...l));
  assert.deepEqual(new Set(result.dropped.flatMap((g) => g.entries)), new Set(behind));
  assert.ok(result.dropped.every((g) => g.reason === "too_far_behind"));
  assert.deepEqual(
    new Set(landed),
    new Set(fresh),
    "the stored stream is told as landed, so a retry skips it",
  );
  assert.ok(
    receiver.requests.slice(1).every((r) => r.streams === 1),
    "one stream per request",
  );
  assert.equal(receiver.counts.unique, 6);
});

test("an unreadable 400 is bisected: a poison entry is isolated within the request budget", async (t) => {
  const { receiver, sink } = await world(t, false);
  receiver.faults.rejectLinesContaining("POISON");
  const batch = Array.from({ length: 64 }, (_, i) => streamEntry(i, false));
  batch[41] = new LogEntry({ ...fields(batch[41]!), line: "POISON here" });
  const result = await sink.push(batch);
  assert.deepEqual(
    result.dropped.flatMap((g) => g.entries),
    [batch[41]],
  );
  assert.equal(result.dropped[0]!.reason, "bad_request");
  assert.match(result.dropped[0]!.detail!, /poison marker/);
  assert.ok(receiver.counts.requests <= 1 + ISOLATION_BUDGET, `${receiver.counts.requests} requests`);
  // A request per stream (two), then the poison's stream of 32 halved: 32 → 16 → … → 1, two a level.
  assert.equal(receiver.counts.requests, 2 + 2 * 5);
  assert.equal(receiver.counts.unique, 63);
});

test("a batch Loki refuses whole and unreadably costs at most the budget, then is dropped saying so", async (t) => {
  const { receiver, sink } = await world(t, false);
  receiver.faults.rejectLinesContaining("ev-"); // every line
  const batch = Array.from({ length: 1000 }, (_, i) => streamEntry(i, false));
  const result = await sink.push(batch);
  // A request per stream, then each stream's half of the budget.
  assert.equal(receiver.counts.requests, 2 + ISOLATION_BUDGET);
  const dropped = result.dropped.flatMap((g) => g.entries);
  assert.equal(dropped.length, 1000);
  assert.equal(new Set(dropped).size, 1000);
  assert.ok(result.dropped.some((g) => /not isolated: the 16 extra requests/.test(g.detail!)));
});

function fields(e: LogEntry): ConstructorParameters<typeof LogEntry>[0] {
  return {
    timestampNs: e.timestampNs,
    labels: e.labels,
    line: e.line,
    structuredMetadata: e.structuredMetadata,
    checkpoint: e.checkpoint,
  };
}

class Reader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

async function droppedCount(reader: Reader): Promise<number> {
  const { resourceMetrics } = await reader.collect();
  let n = 0;
  for (const s of resourceMetrics.scopeMetrics) {
    for (const m of s.metrics) {
      if (m.descriptor.name !== "sf2loki_loki_entries_dropped") continue;
      for (const dp of m.dataPoints as DataPoint<number>[]) n += dp.value;
    }
  }
  return n;
}

for (const local of [true, false]) {
  test(`the pipeline's drop counter moves when the drop happens, before the push ends (local ${local ? "ON" : "OFF"})`, async (t) => {
    const { receiver, sink, clock } = await world(t, local);
    const reader = new Reader();
    const metrics = new PipelineMetrics(
      new MeterProvider({ readers: [reader] }).getMeter("t"),
      () => 0,
      () => 0,
    );
    const batch = Array.from({ length: 50 }, (_, i) => streamEntry(i, i === 7));
    let stallOnDrop = false;
    if (local) {
      receiver.faults.stall(); // the old entry never leaves; the push of the rest is held
    } else {
      // The first answer names the old entry and leaves the rest open (an unreadable poison line),
      // so the push goes on; the receiver holds that second request.
      receiver.faults.rejectLinesContaining('ev-30"');
      stallOnDrop = true;
    }
    const holdingSink: Sink = {
      push: (b, signal, onDropped) =>
        sink.push(b, signal, (group) => {
          onDropped?.(group);
          if (stallOnDrop) receiver.faults.stall(); // once: the first drop
          stallOnDrop = false;
        }),
      close: () => sink.close(),
    };
    const draining = new AbortController();
    const cancelled = new AbortController();
    const pushing = pushBatch(new PendingBatch(0, batch), {
      sink: holdingSink,
      clock,
      metrics,
      logger: silentLogger,
      refusals: new RefusalLog(silentLogger, clock),
      draining: draining.signal,
      cancelled: cancelled.signal,
    });
    const started = clock.monotonic();
    while (receiver.faults.held === 0) await new Promise((r) => setTimeout(r, 1));
    // Still pushing, no clock time passed, and the drop is already counted.
    assert.equal(await droppedCount(reader), 1);
    assert.equal(clock.monotonic() - started, 0);
    receiver.faults.release();
    assert.equal(await pushing, "delivered");
    assert.equal(await droppedCount(reader), local ? 1 : 2, "each entry counted once");
  });
}

for (const local of [false, true]) {
  test(`1 % too old through the pipeline's push into a file dead-letter store (local ${local ? "ON" : "OFF"}): every refusal kept with its reason`, async (t) => {
    const { receiver, sink, clock } = await world(t, local);
    const { batches, old } = onePercentTooOld();
    const store = new FileDeadLetterStore(
      join(tempDir(), "state-deadletter"),
      { maxBytes: 1 << 20, maxEntries: 0 },
      clock,
    );
    const keeper = new DeadLetterKeeper({
      store,
      clock,
      logger: silentLogger,
      meter: new MeterProvider().getMeter("t"),
    });
    const metrics = new PipelineMetrics(
      new MeterProvider().getMeter("t"),
      () => 0,
      () => 0,
    );
    const never = new AbortController().signal;
    for (const [i, batch] of batches.entries()) {
      const outcome = await pushBatch(new PendingBatch(i, batch), {
        sink,
        clock,
        metrics,
        refusals: new RefusalLog(silentLogger, clock),
        logger: silentLogger,
        draining: never,
        cancelled: never,
        deadLetters: keeper,
      });
      assert.equal(outcome, "delivered", "the batch settles and its checkpoint may move on");
    }
    assert.ok(receiver.counts.requests <= 1.1 * 2 * batches.length, `${receiver.counts.requests} pushes`);
    assert.equal(receiver.counts.duplicates, 0);
    const kept = await store.list(never);
    const oldLines = new Set([...old].map((e) => e.line));
    assert.deepEqual(new Set(kept.map((r) => r.line)), oldLines, "exactly the refused entries are kept");
    assert.equal(kept.length, old.size);
    for (const r of kept) {
      assert.equal(r.reason, "too_old");
      assert.match(r.detail, local ? /^reject_old_samples_max_age 168h/ : /has timestamp too old/);
      assert.equal(r.checkpoint_key, "pubsub:/event/x");
    }
  });
}

test("a 400 that stores part of a push tells the rest landed, so a retry does not send it again", async (t) => {
  const { sink } = await world(t, false);
  const { batches, old } = onePercentTooOld();
  const batch = batches[3]!;
  const landed: LogEntry[] = [];
  await sink.push(batch, undefined, undefined, (entries) => landed.push(...entries));
  assert.deepEqual(
    new Set(landed),
    new Set(batch.filter((e) => !old.has(e))),
    "every entry Loki did not name, told once",
  );
  assert.equal(landed.length, batch.length - 1);
});

// Exactly once in Loki (#27), against the simulated Loki with its per-stream out-of-order window and
// its log query: a sparse stream's retried push is never stored behind its own later batches, and a
// resumed run pushes only what Loki does not hold yet. Judged by what the receiver stored.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import { pino } from "pino";
import { LogEntry } from "../../src/model.ts";
import type { DeadLetterGroup } from "../../src/pipeline/dead-letters.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_RECONCILE } from "../../src/pipeline/reconcile.ts";
import { DEFAULT_BATCH_SETTINGS, type BatchSettings } from "../../src/pipeline/settings.ts";
import { startLokiReceiver, type LokiReceiver } from "../../src/sim/loki.ts";
import { createLokiSink, type LokiSink } from "../../src/sinks/loki/sink.ts";
import { LOKI_DEFAULT_LIMITS } from "../../src/sinks/receiving-loki/limits.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { settings } from "../sinks/loki/support.ts";

const NOW_MS = Date.UTC(2026, 11, 1, 12);
const MS = 1_000_000n;
const HOUR_MS = 3_600_000;
const KEY = "pubsub:/event/LoginEventStream";

class Reader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

/** Event i of a sparse stream: one a minute (or every `stepMs`), the newest one step before NOW. */
function sparse(i: number, n: number, stepMs = 60_000): LogEntry {
  return new LogEntry({
    timestampNs: BigInt(NOW_MS - (n - i) * stepMs) * MS,
    labels: { job: "sf2loki", source: "pubsub", event_type: "LoginEventStream" },
    line: `{"EventIdentifier":"ev-${i}"}`,
    structuredMetadata: { UserId: `005${i}` },
    checkpoint: { key: KEY, value: String(i + 1) },
  });
}

interface World {
  clock: ManualClock;
  receiver: LokiReceiver;
  sink: LokiSink;
  logs: { level: number; msg: string }[];
  metric(name: string, attrs?: Record<string, string>): Promise<number>;
  pipeline(items: LogEntry[], store: MemoryStore, batch?: Partial<BatchSettings>): Pipeline;
}

/** A Loki whose queriers ask the ingesters only within `ingestersWithinMs`, and whether to flush it. */
interface HorizonCase {
  ingestersWithinMs?: number;
  flush?: boolean;
}

async function world(t: TestContext, reconcile = true, horizon: HorizonCase = {}): Promise<World> {
  const clock = new ManualClock({ startMs: NOW_MS, auto: true });
  // Loki's ingester with its default max_chunk_age (2h): a stream takes an entry at most 1 h behind.
  const receiver = await startLokiReceiver({
    now: () => clock.now(),
    outOfOrderWindowMs: HOUR_MS,
    ...(horizon.ingestersWithinMs === undefined ? {} : { ingestersWithinMs: horizon.ingestersWithinMs }),
  });
  t.after(() => receiver.stop());
  const sink = createLokiSink(
    settings(receiver.pushUrl, {
      limits: { ...LOKI_DEFAULT_LIMITS, enabled: false },
      reconcile: { enabled: reconcile, ...(horizon.flush ? { flush_url: `${receiver.url}/flush` } : {}) },
    }),
    { clock },
  );
  t.after(() => sink.close());
  const reader = new Reader();
  const meter = new MeterProvider({ readers: [reader] }).getMeter("t");
  const logs: { level: number; msg: string }[] = [];
  const logger = pino({ level: "info" }, { write: (l: string) => logs.push(JSON.parse(l) as never) });
  return {
    clock,
    receiver,
    sink,
    logs,
    metric: async (name, attrs = {}) => {
      const { resourceMetrics } = await reader.collect();
      let sum = 0;
      for (const m of resourceMetrics.scopeMetrics.flatMap((s) => s.metrics)) {
        if (m.descriptor.name !== name) continue;
        for (const dp of m.dataPoints as DataPoint<number>[])
          if (Object.entries(attrs).every(([k, v]) => dp.attributes[k] === v)) sum += dp.value;
      }
      return sum;
    },
    pipeline: (items, store, batch = {}) =>
      new Pipeline({
        sources: [new ScriptedSource("pubsub", items)],
        sink,
        ...(sink.lookup ? { lookup: sink.lookup } : {}),
        reconcile: { ...DEFAULT_RECONCILE, enabled: reconcile },
        store,
        batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 100, flush_interval_ms: 50, ...batch },
        clock,
        logger,
        meter,
      }),
  };
}

for (const window of [true, false]) {
  test(`a sparse stream's failed push retried after later batches landed: ${window ? "nothing lost (window kept)" : "lost without the window (the control)"}`, async (t) => {
    const w = await world(t);
    const n = 600; // 6 batches of 100 events a minute apart: each spans 99 min, beyond Loki's hour
    const items = Array.from({ length: n }, (_, i) => sparse(i, n));
    // The first push fails on every attempt the service makes (5) and once more for the pipeline.
    w.receiver.faults.failNext(5, 503);
    const store = new MemoryStore();
    await w
      .pipeline(items, store, window ? {} : { out_of_order_window_ms: 0 })
      .run(new AbortController().signal);
    const stored = new Set(w.receiver.lines({ event_type: "LoginEventStream" }));
    const missing = items.filter((e) => !stored.has(e.line)).length;
    if (window) {
      assert.equal(missing, 0, "every event stored");
      assert.equal(w.receiver.counts.duplicates, 0);
      assert.equal(await w.metric("sf2loki_loki_entries_dropped"), 0);
    } else {
      assert.ok(missing > 0, `without the window the retried batch is refused (${missing} lost)`);
    }
    assert.equal(store.doc.get(KEY), String(n));
  });
}

test("a resumed run looks up what the previous run pushed and sends only the rest: no copy stored twice", async (t) => {
  const w = await world(t);
  const n = 1000;
  const items = Array.from({ length: n }, (_, i) => sparse(i, n));
  // The previous run pushed the first 450 (acknowledged) and died before committing anything.
  await w.sink.push(items.slice(0, 450));
  const store = new MemoryStore();
  await w.pipeline(items, store).run(new AbortController().signal);
  assert.equal(w.receiver.counts.duplicates, 0, "no event stored twice");
  assert.equal(w.receiver.counts.unique, n);
  assert.equal(await w.metric("sf2loki_reconcile_entries_skipped", { reason: "resume" }), 450);
  assert.equal(await w.metric("sf2loki_reconcile_resumes", { outcome: "checked" }), 1);
  const queries = await w.metric("sf2loki_reconcile_queries");
  assert.equal(queries, w.receiver.queries);
  // One query per batch of 100 looked up, and one more for the batch the previous run stored in part
  // (a short page ends the lookup only once nothing new comes back).
  assert.ok(
    queries >= 1 && queries <= 11,
    `one query per batch looked up, one more per partial (${queries})`,
  );
  assert.equal(store.doc.get(KEY), String(n));
});

test("only the window the previous run could have pushed is looked up: max_uncommitted × max_entries per key", async (t) => {
  const w = await world(t);
  const n = 1000;
  const items = Array.from({ length: n }, (_, i) => sparse(i, n));
  await w
    .pipeline(items, new MemoryStore(), { max_in_flight: 2, max_uncommitted: 3 })
    .run(new AbortController().signal);
  // 3 batches × 100 entries: three lookups, then none for the 700 after them.
  assert.equal(w.receiver.queries, 3);
  assert.equal(w.receiver.counts.unique, n);
});

test("events dated after the resume (plus the clock skew) are never looked up", async (t) => {
  const w = await world(t);
  const items = Array.from(
    { length: 50 },
    (_, i) =>
      new LogEntry({
        timestampNs: BigInt(NOW_MS + DEFAULT_RECONCILE.clock_skew_ms + 1000 + i) * MS,
        labels: { job: "sf2loki", source: "pubsub", event_type: "LoginEventStream" },
        line: `late-${i}`,
        checkpoint: { key: KEY, value: String(i + 1) },
      }),
  );
  await w.pipeline(items, new MemoryStore()).run(new AbortController().signal);
  assert.equal(w.receiver.queries, 0);
  assert.equal(w.receiver.counts.unique, 50);
});

test("Loki's read path down: delivery goes on at-least-once, one WARN, the resume counted degraded", async (t) => {
  const w = await world(t);
  const n = 500;
  // One a second: no re-sent copy is refused as too far behind, so every one is stored again.
  const items = Array.from({ length: n }, (_, i) => sparse(i, n, 1000));
  await w.sink.push(items.slice(0, 150));
  w.receiver.faults.failQueries(503);
  const store = new MemoryStore();
  const pipeline = w.pipeline(items, store);
  await pipeline.run(new AbortController().signal);
  const stored = new Set(w.receiver.lines({ event_type: "LoginEventStream" }));
  assert.equal(items.filter((e) => !stored.has(e.line)).length, 0, "nothing lost");
  assert.equal(w.receiver.counts.duplicates, 150, "the re-sent copies, bounded by what was pushed before");
  // The lookups of the batches in flight together (max_in_flight) were asked before any answered.
  assert.ok(w.receiver.queries <= DEFAULT_BATCH_SETTINGS.max_in_flight, `${w.receiver.queries} queries`);
  assert.equal(
    await w.metric("sf2loki_reconcile_resumes", { outcome: "degraded", reason: "unavailable" }),
    1,
  );
  const warns = w.logs.filter((l) => l.level === 40 && l.msg.startsWith("Reconcile on resume degraded"));
  assert.equal(warns.length, 1);
  assert.match(warns[0]!.msg, /sink\.loki\.reconcile\.query_url/);
  assert.deepEqual(
    { state: pipeline.status().resumes[""]?.state, reason: pipeline.status().resumes[""]?.reason },
    { state: "degraded", reason: "unavailable" },
  );
  assert.equal(store.doc.get(KEY), String(n));
});

/** `n` events one a second, the newest `hoursBack` hours before NOW. */
function backlog(n: number, hoursBack: number): LogEntry[] {
  return Array.from({ length: n }, (_, i) => sparse(i, n, 1000)).map(
    (e, i) =>
      new LogEntry({
        timestampNs: e.timestampNs - BigInt(hoursBack * HOUR_MS) * MS,
        labels: e.labels,
        line: e.line,
        checkpoint: { key: KEY, value: String(i + 1) },
      }),
  );
}

test("a resume past Loki's ingester horizon: nothing lost, what no lookup could see counted, one WARN saying what to set", async (t) => {
  const w = await world(t, true, { ingestersWithinMs: 3 * HOUR_MS });
  const items = backlog(500, 4); // dated 4 h 8 min to 4 h back: past the 3 h horizon
  await w.sink.push(items.slice(0, 150)); // the previous run's, unflushed in the ingester
  const pipeline = w.pipeline(items, new MemoryStore());
  await pipeline.run(new AbortController().signal);
  const stored = new Set(w.receiver.lines({ event_type: "LoginEventStream" }));
  assert.equal(items.filter((e) => !stored.has(e.line)).length, 0, "nothing lost");
  // The simulated Loki keeps every re-send (the real one drops most of them itself).
  assert.equal(w.receiver.counts.duplicates, 150, "the lookups could not see the previous run's pushes");
  assert.equal(w.receiver.flushes, 0);
  assert.equal(await w.metric("sf2loki_reconcile_entries_unverified", { reason: "ingester_horizon" }), 500);
  const resume = pipeline.status().resumes[""]!;
  assert.deepEqual(
    { horizon_s: resume.horizon_s, unverified: resume.entries_unverified, flushed: resume.flushed },
    { horizon_s: 10_800, unverified: 500, flushed: undefined },
  );
  assert.ok(resume.oldest_unverified_age_s! >= 4 * 3600, `${resume.oldest_unverified_age_s}`);
  const warns = w.logs.filter((l) => l.level === 40 && l.msg.startsWith("Reconcile on resume cannot see"));
  assert.equal(warns.length, 1, "said once per resume");
  assert.match(warns[0]!.msg, /4\.\d h back/);
  assert.match(warns[0]!.msg, /3\.0 h \(query_ingesters_within, read from its \/config\)/);
  assert.match(warns[0]!.msg, /sink\.loki\.reconcile\.flush_url/);
});

test("with flush_url: a resume past the horizon flushes the ingester once, then skips what the previous run pushed", async (t) => {
  const w = await world(t, true, { ingestersWithinMs: 3 * HOUR_MS, flush: true });
  const items = backlog(500, 4);
  await w.sink.push(items.slice(0, 150));
  const pipeline = w.pipeline(items, new MemoryStore());
  await pipeline.run(new AbortController().signal);
  assert.equal(w.receiver.counts.duplicates, 0, "no copy");
  assert.equal(w.receiver.counts.unique, 500);
  assert.equal(w.receiver.flushes, 1, "one flush per resume");
  assert.equal(await w.metric("sf2loki_reconcile_entries_skipped", { reason: "resume" }), 150);
  assert.equal(await w.metric("sf2loki_reconcile_entries_unverified", { reason: "ingester_horizon" }), 0);
  assert.equal(await w.metric("sf2loki_reconcile_flushes", { outcome: "flushed" }), 1);
  assert.equal(pipeline.status().resumes[""]?.flushed, true);
  assert.equal(w.logs.filter((l) => l.level === 40).length, 0, "nothing to warn about");
});

test("a resume inside the horizon neither flushes nor counts anything unverified", async (t) => {
  const w = await world(t, true, { ingestersWithinMs: 3 * HOUR_MS, flush: true });
  const items = backlog(500, 1);
  await w.sink.push(items.slice(0, 150));
  await w.pipeline(items, new MemoryStore()).run(new AbortController().signal);
  assert.equal(w.receiver.counts.duplicates, 0);
  assert.equal(w.receiver.flushes, 0);
  assert.equal(await w.metric("sf2loki_reconcile_entries_unverified", { reason: "ingester_horizon" }), 0);
});

test("reconcile off: no lookup, the resume counted off", async (t) => {
  const w = await world(t, false);
  const items = Array.from({ length: 200 }, (_, i) => sparse(i, 200));
  await w.pipeline(items, new MemoryStore()).run(new AbortController().signal);
  assert.equal(w.receiver.queries, 0);
  assert.equal(await w.metric("sf2loki_reconcile_resumes", { outcome: "off", reason: "disabled" }), 1);
});

test("a re-send Loki refuses as too far behind but holds is delivered, not dead-lettered; one never stored is", async (t) => {
  const w = await world(t);
  const n = 300;
  const items = Array.from({ length: n }, (_, i) => sparse(i, n));
  // Loki holds events 0..99 and the stream's newest one; a resumed run whose lookups were not asked
  // (its budget spent) re-sends 0..99: refused as too far behind, found stored.
  await w.sink.push([...items.slice(0, 100), items[n - 1]!]);
  const never = sparse(-200, n); // older than anything, never stored: a real refusal
  const store = new MemoryStore();
  const kept: DeadLetterGroup[] = [];
  const pipeline = new Pipeline({
    deadLetters: {
      keep: (group) => {
        kept.push(group);
        return Promise.resolve();
      },
    },
    sources: [new ScriptedSource("pubsub", [never, ...items.slice(0, 100)])],
    sink: w.sink,
    lookup: w.sink.lookup!,
    reconcile: { ...DEFAULT_RECONCILE, clock_skew_ms: -48 * HOUR_MS }, // nothing dated before the resume
    store,
    batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 200, flush_interval_ms: 50 },
    clock: w.clock,
  });
  await pipeline.run(new AbortController().signal);
  assert.equal(w.receiver.counts.duplicates, 0);
  assert.equal(store.doc.get(KEY), "100");
  assert.equal(pipeline.status().resumes[""]?.entries_checked, 0, "the resume looked nothing up");
  // The pipeline's own meter is the global no-op one here; the receiver shows what happened.
  assert.equal(w.receiver.queries, 1, "one lookup settled the refused entries");
  assert.ok(!new Set(w.receiver.lines()).has(never.line));
  assert.deepEqual(
    kept.map((g) => [g.reason, g.entries.map((e) => e.line)]),
    [["too_far_behind", [never.line]]],
    "only the entry Loki does not hold is a dead letter",
  );
});

// The daily budget against the real Loki receiver on a manual clock: `pause` holds pushes and commits
// with nothing lost and resumes at 00:00 UTC, the watchdog does not call it a stall, a restart continues
// the day's count from `egress:budget`, and `drop` counts every dropped entry while the checkpoint moves.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { pino } from "pino";
import { BUDGET_PAUSED_REASON } from "../../src/egress/governed-sink.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { Watchdog } from "../../src/daemon/watchdog.ts";
import { ChannelSource, MemoryStore, ScriptedSource, settle, waitUntil } from "../support/fakes.ts";
import { governedRun, sized } from "./support.ts";

const KEY = "eventlog_objects:ApiEvent";
const pad = (n: number): string => String(n).padStart(6, "0");

function watchdog(
  clock: ManualClock,
  run: Awaited<ReturnType<typeof governedRun>>,
  withHold: boolean,
): Watchdog {
  return new Watchdog({
    stallMs: 60_000,
    livenessMs: 300_000,
    clock,
    meter: new MeterProvider().getMeter("test"),
    logger: pino({ level: "silent" }),
    leading: () => true,
    progress: () => run.pipeline.progress(),
    storeFailing: () => undefined,
    onStall: () => false,
    ...(withHold ? { hold: () => run.governor.hold() } : {}),
  });
}

test("pause: the push over budget is held with its checkpoint, nothing is lost, and it resumes at 00:00 UTC", async (t) => {
  const clock = new ManualClock({ auto: false, startMs: Date.UTC(2026, 11, 1, 22, 0) });
  const src = new ChannelSource("eventlog_objects");
  const run = await governedRun(t, {
    clock,
    sources: [src],
    egress: { daily_byte_budget: 1_000, budget_action: "pause" },
    batch: { max_entries: 2 },
  });
  const stop = new AbortController();
  const running = run.pipeline.run(stop.signal);
  const withHold = watchdog(clock, run, true);
  const without = watchdog(clock, run, false);

  for (let n = 1; n <= 10; n++) src.emit(sized(KEY, n, 100));
  await waitUntil(() => run.store.doc.get(KEY) === pad(10), "the first 1000 bytes committed");
  assert.equal(run.receiver.counts.unique, 10);
  assert.equal(run.store.doc.get("egress:budget"), '{"date": "2026-12-01", "bytes": 1000}');
  assert.equal(run.logs.filter((l) => /80% of sink.loki.egress.daily_byte_budget/.test(l.msg)).length, 1);

  for (let n = 11; n <= 16; n++) src.emit(sized(KEY, n, 100));
  await waitUntil(() => run.governor.pausedReason !== undefined, "the pause");
  assert.equal(run.governor.pausedReason, BUDGET_PAUSED_REASON);
  assert.equal(await run.metrics.sum("sf2loki_egress_paused"), 1);
  assert.equal(await run.metrics.sum("sf2loki_egress_budget_used_bytes"), 1000);
  assert.equal(run.logs.filter((l) => /pushes and checkpoints are held/.test(l.msg)).length, 1);

  // Two hours held: nothing pushed, nothing committed, the watchdog sees a deliberate pause.
  for (let i = 0; i < 119; i++) {
    clock.advance(60_000);
    await settle();
    withHold.tick();
    without.tick();
  }
  assert.equal(run.receiver.counts.unique, 10, "nothing pushed while paused");
  assert.equal(run.store.doc.get(KEY), pad(10), "the checkpoint stays behind");
  assert.equal(withHold.stalled, undefined, "a budget pause is not a stall");
  assert.equal(withHold.wedged, undefined);
  assert.match(without.stalled ?? "", /pipeline stalled/, "without the hold the same run would look stalled");

  clock.advance(60_000); // 00:00 UTC
  await waitUntil(() => run.store.doc.get(KEY) === pad(16), "resumed and committed");
  await settle();
  withHold.tick();
  assert.equal(withHold.stalled, undefined, "the paused time is not held against the resumed pipeline");
  assert.equal(run.governor.pausedReason, undefined);
  assert.equal(await run.metrics.sum("sf2loki_egress_paused"), 0);
  assert.equal(run.receiver.counts.unique, 16, "every entry delivered");
  assert.equal(run.receiver.counts.duplicates, 0);
  assert.equal(run.store.doc.get("egress:budget"), '{"date": "2026-12-02", "bytes": 600}');

  stop.abort();
  src.end();
  await running;
});

test("a restart mid-day continues the count from egress:budget (the Python value) and pauses at once", async (t) => {
  const clock = new ManualClock({ auto: false, startMs: Date.UTC(2026, 11, 1, 9, 30) });
  const store = new MemoryStore({ "egress:budget": '{"date": "2026-12-01", "bytes": 950}', [KEY]: pad(0) });
  const src = new ChannelSource("eventlog_objects");
  const run = await governedRun(t, {
    clock,
    store,
    sources: [src],
    egress: { daily_byte_budget: 1_000 },
    batch: { max_entries: 1 },
  });
  assert.equal(run.governor.status().budget_used_bytes, 950);
  const stop = new AbortController();
  const running = run.pipeline.run(stop.signal);
  src.emit(sized(KEY, 1, 100));
  await waitUntil(() => run.governor.pausedReason !== undefined, "the pause");
  await settle();
  assert.equal(run.receiver.counts.requests, 0, "the continued count left no room");
  assert.equal(store.doc.get(KEY), pad(0));
  // Stopping while paused abandons the held batch: it is re-read next run, never lost.
  stop.abort();
  src.end();
  const state = { ended: false };
  const done = running.finally(() => (state.ended = true));
  for (let i = 0; i < 20 && !state.ended; i++) {
    clock.advance(1_000); // the shutdown grace runs out on the held push
    await settle();
  }
  await done;
  assert.equal(store.doc.get(KEY), pad(0));
  assert.equal(run.receiver.counts.requests, 0);

  // Yesterday's count does not carry over.
  const fresh = new MemoryStore({ "egress:budget": '{"date": "2026-11-30", "bytes": 950}' });
  const next = await governedRun(t, {
    clock,
    store: fresh,
    sources: [],
    egress: { daily_byte_budget: 1_000 },
  });
  assert.equal(next.governor.status().budget_used_bytes, 0);
});

test("drop: every entry over budget is counted as dropped{reason=budget} and the checkpoint moves on", async (t) => {
  const clock = new ManualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
  const rows = Array.from({ length: 40 }, (_, i) => sized(KEY, i + 1, 100));
  const run = await governedRun(t, {
    clock,
    sources: [new ScriptedSource("eventlog_objects", rows)],
    egress: { daily_byte_budget: 1_000, budget_action: "drop" },
    batch: { max_entries: 2 },
  });
  await run.pipeline.run(new AbortController().signal);
  assert.equal(run.receiver.counts.unique, 10, "1000 bytes delivered");
  assert.equal(await run.metrics.sum("sf2loki_loki_entries_dropped", { reason: "budget" }), 30);
  assert.equal(run.governor.status().budget_dropped_entries, 30);
  assert.equal(run.store.doc.get(KEY), pad(40), "the checkpoint moved past the dropped entries");
  assert.equal(run.store.doc.get("egress:budget"), '{"date": "2026-12-01", "bytes": 1000}');
  assert.equal(await run.metrics.sum("sf2loki_egress_paused"), 0);
  assert.equal(
    run.logs.filter((l) => /dropping entries until 00:00 UTC/.test(l.msg)).length,
    1,
    "rate-limited WARN",
  );
  assert.equal(
    run.logs.filter((l) => /Loki refused/.test(l.msg)).length,
    0,
    "not reported as Loki's refusal",
  );
});

test("a push Loki fails and the pipeline retries counts its bytes once, and only once Loki accepted them", async (t) => {
  const clock = new ManualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
  const rows = Array.from({ length: 10 }, (_, i) => sized(KEY, i + 1, 100));
  const run = await governedRun(t, {
    clock,
    sources: [new ScriptedSource("eventlog_objects", rows)],
    egress: { daily_byte_budget: 1_000_000 },
    batch: { max_entries: 5 },
  });
  run.receiver.faults.failNext(12, 503); // more than the sink's own attempts: the pipeline retries too
  await run.pipeline.run(new AbortController().signal);
  assert.ok(run.receiver.counts.forcedFailures >= 12);
  assert.equal(run.receiver.counts.unique, 10);
  assert.equal(run.governor.status().budget_used_bytes, 1_000);
  assert.equal(run.store.doc.get("egress:budget"), '{"date": "2026-12-01", "bytes": 1000}');
});

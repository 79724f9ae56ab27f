// Routes (#123): an org's own Loki destination is a sink with lanes of its own. A destination that
// holds its pushes (a budget pause, an outage) holds only its own checkpoints, and a destination that
// fails and retries never makes another destination's entries go out twice.
import { test } from "node:test";
import assert from "node:assert/strict";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";
import {
  ChannelSource,
  entry,
  FakeSink,
  MemoryStore,
  ScriptedSource,
  settle,
  waitUntil,
} from "../support/fakes.ts";

const ENTRIES = 30;

function source(key: string): ScriptedSource {
  return new ScriptedSource("eventlog_objects", () =>
    Array.from({ length: ENTRIES }, (_, i) => entry(key, String(i + 1).padStart(3, "0"))),
  );
}

function pipelineOf(main: FakeSink, other: FakeSink, store: MemoryStore, clock: ManualClock): Pipeline {
  return new Pipeline({
    sources: [source("eventlog_objects:A")],
    sink: main,
    routes: [{ name: "emea", sources: [source("org=emea:eventlog_objects:B")], sink: other }],
    store,
    batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 10, flush_interval_ms: 250 },
    shutdown_grace_ms: 1_000,
    clock,
  });
}

test("a route whose sink holds every push holds only its own checkpoints; the other route delivers and commits", async () => {
  const clock = new ManualClock({ auto: false });
  const store = new MemoryStore();
  const main = new FakeSink();
  const held = new FakeSink();
  held.stall();
  const pipeline = pipelineOf(main, held, store, clock);
  const stop = new AbortController();
  const running = pipeline.run(stop.signal);
  await waitUntil(() => store.doc.get("eventlog_objects:A") === "030", "route A's last checkpoint");
  await settle();
  assert.deepEqual(
    main.deliveredValues,
    Array.from({ length: ENTRIES }, (_, i) => String(i + 1).padStart(3, "0")),
    "every A entry pushed once, in order",
  );
  assert.ok(held.pending().length > 0, "the held route's pushes wait");
  assert.equal(
    store.doc.get("org=emea:eventlog_objects:B"),
    undefined,
    "nothing of the held route committed",
  );
  const lanes = pipeline.status().lanes;
  assert.deepEqual(Object.keys(lanes).sort(), ["bulk", "bulk@emea"]);
  assert.ok((lanes["bulk@emea"]?.in_flight ?? 0) > 0);
  assert.equal(lanes["bulk"]?.in_flight, 0);
  // Stopping abandons the held route's batches after the grace; route A had nothing left.
  stop.abort();
  await settle();
  clock.advance(1_000);
  await running;
  assert.equal(store.doc.get("org=emea:eventlog_objects:B"), undefined);
});

test("a retryable failure on one route re-sends only that route's batch, never the other route's entries", async () => {
  const clock = new ManualClock({ auto: false });
  const store = new MemoryStore();
  const main = new FakeSink();
  const flaky = new FakeSink();
  // Its first two pushes fail retryably: the pipeline retries them with backoff (1 s, then 2 s).
  flaky.script({ retryable: undefined }, { retryable: undefined });
  const pipeline = pipelineOf(main, flaky, store, clock);
  const stop = new AbortController();
  const running = pipeline.run(stop.signal);
  await waitUntil(() => store.doc.get("eventlog_objects:A") === "030", "route A's last checkpoint");
  assert.equal(pipeline.sinkFailing()?.route, "emea", "readiness can name the failing destination");
  for (let i = 0; i < 10 && store.doc.get("org=emea:eventlog_objects:B") !== "030"; i++) {
    clock.advance(2_000);
    await settle(20);
  }
  assert.equal(store.doc.get("org=emea:eventlog_objects:B"), "030", "the flaky route delivered in the end");
  assert.equal(pipeline.sinkFailing(), undefined);
  assert.equal(main.calls.length, ENTRIES / 10, "route A: one push per batch, none repeated");
  assert.equal(new Set(main.deliveredValues).size, ENTRIES);
  const failed = flaky.calls.filter((c) => c.values[0] === "001").length;
  assert.ok(failed >= 2, "the flaky route's first batch was retried");
  for (const call of flaky.calls) {
    for (const e of call.entries) assert.equal(e.checkpoint.key, "org=emea:eventlog_objects:B");
  }
  stop.abort();
  await running;
});

test("the watchdog's view: a held route's lanes are not pending work, another route's stuck lanes still are", async () => {
  const clock = new ManualClock({ auto: false });
  const main = new FakeSink();
  const held = new FakeSink();
  held.stall();
  const live = new ChannelSource("eventlog_objects");
  const store = new MemoryStore();
  const pipeline = new Pipeline({
    sources: [live],
    sink: main,
    routes: [{ name: "emea", sources: [source("org=emea:eventlog_objects:B")], sink: held }],
    store,
    batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 10, flush_interval_ms: 250 },
    shutdown_grace_ms: 1_000,
    clock,
  });
  const stop = new AbortController();
  const running = pipeline.run(stop.signal);
  await waitUntil(() => held.pending().length > 0, "the held route's pushes");
  const emea = new Set(["emea"]);
  assert.equal(pipeline.progress()?.pending, true, "without the hold, the held lanes are work");
  assert.equal(pipeline.progress(emea)?.pending, false, "a paused destination alone is not a stall");
  // Now the other route gets work its sink never answers: that is still watched during the pause.
  main.stall();
  live.emit(...Array.from({ length: 10 }, (_, i) => entry("eventlog_objects:A", String(i))));
  await waitUntil(() => main.pending().length > 0, "route A's stuck push");
  assert.equal(pipeline.progress(emea)?.pending, true);
  clock.advance(5_000);
  assert.ok((pipeline.progress(emea)?.sinceProgressMs ?? 0) >= 5_000, "and it makes no progress");
  stop.abort();
  await settle();
  clock.advance(1_000);
  await running;
});

// The keeper between the pipeline and the store: evictions at the bound are counted, and under HA a
// replica whose term ended writes nothing (the next leader keeps those entries).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { pino } from "pino";
import { FileDeadLetterStore } from "../../src/deadletter/file-store.ts";
import { DeadLetterKeeper } from "../../src/deadletter/keeper.ts";
import { StateFenceError } from "../../src/state/errors.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { entry } from "../support/fakes.ts";
import { tempDir } from "../support/tmp.ts";
import { TestMetrics } from "../sinks/loki/support.ts";

const SIGNAL = new AbortController().signal;

function setup(fence?: () => void) {
  const clock = new ManualClock();
  const metrics = new TestMetrics();
  const logs: { level: number; msg: string; evicted?: number }[] = [];
  const logger = pino(
    { level: "debug" },
    { write: (l: string) => logs.push(JSON.parse(l) as (typeof logs)[number]) },
  );
  const store = new FileDeadLetterStore(
    join(tempDir(), "state-deadletter"),
    { maxBytes: 1 << 20, maxEntries: 8 },
    clock,
  );
  const keeper = new DeadLetterKeeper({
    store,
    clock,
    logger,
    meter: metrics.meter,
    ...(fence ? { fence } : {}),
  });
  return { clock, metrics, logs, store, keeper };
}

test("past the bound the oldest are evicted: counted, gauged and warned about", async () => {
  const { clock, metrics, logs, store, keeper } = setup();
  assert.equal(await metrics.sum("sf2loki_deadletter_evicted"), 0, "exported at 0 from start-up");
  for (let i = 0; i < 10; i++) {
    clock.advance(1);
    await keeper.keep(
      { entries: [entry("apexlog", String(i), { line: `l${i}` })], reason: "bad_request", detail: "d" },
      SIGNAL,
    );
  }
  assert.equal(await metrics.sum("sf2loki_deadletter_entries", { reason: "bad_request" }), 10);
  assert.equal(await metrics.sum("sf2loki_deadletter_evicted"), 2);
  assert.equal(await metrics.sum("sf2loki_deadletter_held_entries"), 8);
  assert.ok((await metrics.sum("sf2loki_deadletter_held_bytes")) > 0);
  assert.equal(
    logs.filter((l) => l.level === 40 && /at its bound; the oldest letters were evicted/.test(l.msg)).length,
    2,
  );
  assert.equal((await store.list(SIGNAL))[0]!.line, "l2");
});

test("under HA a replica whose term ended keeps nothing and counts no failure", async () => {
  const { metrics, logs, store, keeper } = setup(() => {
    throw new StateFenceError("lease lost");
  });
  await keeper.keep({ entries: [entry("apexlog", "1")], reason: "bad_request", detail: "d" }, SIGNAL);
  assert.deepEqual(await store.list(SIGNAL), []);
  assert.equal(await metrics.sum("sf2loki_deadletter_write_failures"), 0);
  assert.equal(await metrics.sum("sf2loki_deadletter_entries"), 0);
  assert.ok(logs.some((l) => l.level === 40 && /leadership term ended/.test(l.msg)));
});

test("a term's survey fills the held gauges from what an earlier process left, and says letters are waiting", async () => {
  const first = setup();
  await first.keeper.keep(
    { entries: [entry("apexlog", "1"), entry("apexlog", "2")], reason: "bad_request", detail: "d" },
    SIGNAL,
  );
  // A new process over the same directory: nothing known until it looks.
  const clock = new ManualClock();
  const metrics = new TestMetrics();
  const logs: { level: number; msg: string; held_entries?: number }[] = [];
  const logger = pino(
    { level: "debug" },
    { write: (l: string) => logs.push(JSON.parse(l) as (typeof logs)[number]) },
  );
  const store = new FileDeadLetterStore(first.store.location, { maxBytes: 1 << 20, maxEntries: 8 }, clock);
  const keeper = new DeadLetterKeeper({ store, clock, logger, meter: metrics.meter });
  assert.equal(await metrics.sum("sf2loki_deadletter_held_entries"), 0, "no series before the survey");
  await keeper.survey(SIGNAL);
  assert.equal(await metrics.sum("sf2loki_deadletter_held_entries"), 2);
  assert.ok(
    logs.some((l) => l.level === 30 && l.held_entries === 2 && /dead letters are waiting/.test(l.msg)),
  );
});

test("a store that never answers holds the push only until the deadline: a counted failure, then the pipeline goes on", async () => {
  const clock = new ManualClock();
  const metrics = new TestMetrics();
  const logs: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: "debug" },
    { write: (l: string) => logs.push(JSON.parse(l) as (typeof logs)[number]) },
  );
  const hanging = new FileDeadLetterStore(join(tempDir(), "d"), { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  hanging.append = () => new Promise(() => undefined);
  let expire: (() => void) | undefined;
  const keeper = new DeadLetterKeeper({
    store: hanging,
    clock,
    logger,
    meter: metrics.meter,
    deadline: (ms, onExpiry) => {
      assert.equal(ms, 15_000);
      expire = onExpiry;
      return () => undefined;
    },
  });
  const keeping = keeper.keep(
    { entries: [entry("apexlog", "1")], reason: "bad_request", detail: "d" },
    SIGNAL,
  );
  let done = false;
  void keeping.then(() => (done = true));
  await new Promise((r) => setImmediate(r));
  assert.equal(done, false, "waiting for the store");
  expire?.();
  await keeping;
  assert.equal(await metrics.sum("sf2loki_deadletter_write_failures"), 1);
  assert.ok(logs.some((l) => l.level === 50 && /did not answer within 15 s/.test(JSON.stringify(l))));
});

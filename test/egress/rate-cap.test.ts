// A byte cap holds: the real pipeline pushing into the real Loki receiver through the governor, on a
// manual clock whose time moves only when something sleeps (so the rate is the governor's doing).
import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../src/util/clock.ts";
import { ScriptedSource } from "../support/fakes.ts";
import { governedRun, sized } from "./support.ts";

const CAP = 20_000; // bytes per second
const LINE = 200;
const ROWS = 3_000; // 600 000 bytes: about 30 s of simulated time at the cap
const WINDOW_MS = 10_000;

test(`a cap of ${String(CAP)} bytes/s holds within 10 % over every 10 s window and over the whole run`, async (t) => {
  const clock = new ManualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
  const rows = Array.from({ length: ROWS }, (_, i) => sized("eventlog_objects:ApiEvent", i + 1, LINE));
  const run = await governedRun(t, {
    clock,
    sources: [new ScriptedSource("eventlog_objects", rows)],
    egress: { max_bytes_per_second: CAP },
    batch: { max_entries: 25 },
  });
  await run.pipeline.run(new AbortController().signal);

  assert.equal(run.receiver.counts.unique, ROWS, "nothing lost");
  assert.equal(run.store.doc.get("eventlog_objects:ApiEvent"), String(ROWS).padStart(6, "0"));
  const log = run.admissions.admitted;
  const first = log[0]!.atMono;
  const last = log.at(-1)!.atMono;
  const total = log.reduce((n, a) => n + a.bytes, 0);
  assert.equal(total, ROWS * LINE);
  const seconds = (last - first) / 1000;
  assert.ok(seconds >= 10, `ran ${String(seconds)} s of simulated time`);
  // Every batch admitted in [first, last] paid for its bytes except the bucket's initial second.
  const rate = (total - CAP) / seconds;
  assert.ok(Math.abs(rate - CAP) / CAP <= 0.1, `average ${rate.toFixed(0)} B/s vs cap ${String(CAP)}`);
  // Sliding 10 s windows after the start-up burst: never more than 10 % over, never far under.
  for (let from = first + 1000; from + WINDOW_MS <= last; from += 500) {
    const bytes = log
      .filter((a) => a.atMono >= from && a.atMono < from + WINDOW_MS)
      .reduce((n, a) => n + a.bytes, 0);
    const r = bytes / (WINDOW_MS / 1000);
    assert.ok(Math.abs(r - CAP) / CAP <= 0.1, `window at ${String(from)} ms: ${r.toFixed(0)} B/s`);
  }
  assert.ok((await run.metrics.sum("sf2loki_egress_budget_used_bytes")) === 0, "no budget configured");
  assert.equal((run.governor.status().rate_limited_pushes as number) > 0, true);
});

test("a lines cap holds the same way", async (t) => {
  const clock = new ManualClock({ startMs: Date.UTC(2026, 11, 1, 12) });
  const rows = Array.from({ length: 1_500 }, (_, i) => sized("eventlog_objects:ApiEvent", i + 1, 50));
  const run = await governedRun(t, {
    clock,
    sources: [new ScriptedSource("eventlog_objects", rows)],
    egress: { max_lines_per_second: 100 },
    batch: { max_entries: 10 },
  });
  await run.pipeline.run(new AbortController().signal);
  assert.equal(run.receiver.counts.unique, 1_500);
  const log = run.admissions.admitted;
  const seconds = (log.at(-1)!.atMono - log[0]!.atMono) / 1000;
  const rate = (1_500 - 100) / seconds;
  assert.ok(
    seconds >= 10 && Math.abs(rate - 100) / 100 <= 0.1,
    `${rate.toFixed(1)} lines/s over ${String(seconds)} s`,
  );
});

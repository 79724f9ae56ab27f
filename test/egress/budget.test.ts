// The daily counter: the Python version's stored format, the UTC-day rollover, the 80 % warning.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../src/util/clock.ts";
import { DailyBudget, formatBudget, parseBudget } from "../../src/egress/budget.ts";
import { captureLogger } from "../state/helpers/capture-logger.ts";

test("the stored value is byte for byte what Python's json.dumps writes, and reads back", () => {
  assert.equal(formatBudget("2026-12-01", 1234), '{"date": "2026-12-01", "bytes": 1234}');
  assert.equal(parseBudget('{"date": "2026-12-01", "bytes": 1234}', "2026-12-01"), 1234);
  assert.equal(parseBudget('{"date":"2026-12-01","bytes":7}', "2026-12-01"), 7, "compact JSON too");
  assert.equal(parseBudget('{"date": "2026-11-30", "bytes": 1234}', "2026-12-01"), 0, "yesterday's");
  for (const bad of [
    "",
    "{",
    "[]",
    '{"date": "2026-12-01", "bytes": -1}',
    '{"date": "2026-12-01", "bytes": "9"}',
  ])
    assert.equal(parseBudget(bad, "2026-12-01"), 0, bad);
  assert.equal(parseBudget(undefined, "2026-12-01"), 0);
});

test("the day rolls over at 00:00 UTC; 80 % warns once per day; a day with nothing counted admits any batch", () => {
  const clock = new ManualClock({ auto: false, startMs: Date.UTC(2026, 11, 1, 23, 0) });
  const { lines, logger } = captureLogger();
  const b = new DailyBudget(1000, clock, logger);
  assert.equal(b.wouldExceed(5000), false, "one batch larger than the budget still goes on an empty day");
  b.load('{"date": "2026-12-01", "bytes": 700}');
  assert.equal(b.used, 700);
  b.record(100);
  assert.equal(lines.filter((l) => /80%/.test(l.msg)).length, 1);
  b.record(100);
  assert.equal(lines.filter((l) => /80%/.test(l.msg)).length, 1, "once");
  assert.equal(b.wouldExceed(100), false, "exactly the budget is within it");
  assert.equal(b.wouldExceed(101), true);
  assert.equal(b.serialize(), '{"date": "2026-12-01", "bytes": 900}');
  assert.equal(b.msToMidnight(), 3_600_000);
  clock.advance(3_600_000);
  assert.equal(b.used, 0);
  assert.equal(b.date, "2026-12-02");
  assert.equal(b.wouldExceed(101), false);
  b.record(850);
  assert.equal(lines.filter((l) => /80%/.test(l.msg)).length, 2, "re-armed for the new day");
});

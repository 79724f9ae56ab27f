import { test } from "node:test";
import assert from "node:assert/strict";
import { formatDuration, parseDuration } from "../../src/config/duration.ts";

test("accepts the spec's duration grammar", () => {
  const cases: [string | number, number][] = [
    ["5m", 300_000],
    ["1h30m", 5_400_000],
    ["500ms", 500],
    ["1.5m", 90_000],
    ["2w", 1_209_600_000],
    ["1d", 86_400_000],
    ["9", 9000],
    ["90", 90_000],
    [45, 45_000],
    ["PT9S", 9000],
    ["P1D", 86_400_000],
    ["01:30:00", 5_400_000],
    ["-5", -5000],
    ["0", 0],
  ];
  for (const [input, ms] of cases)
    assert.equal(parseDuration(input), ms, `parseDuration(${JSON.stringify(input)})`);
});

test("rejects what the spec rejects", () => {
  for (const bad of ["5x", "1h 30m", "5M", "-5s", "", "m", "P", "PT", "1hh"]) {
    assert.equal(parseDuration(bad), undefined, `should reject ${JSON.stringify(bad)}`);
  }
});

test("formats with the coarsest exact unit", () => {
  assert.equal(formatDuration(86_400_000), "1d");
  assert.equal(formatDuration(90_000), "90s");
  assert.equal(formatDuration(0), "0s");
  assert.equal(formatDuration(1500), "1500ms");
  assert.equal(formatDuration(604_800_000), "1w");
});

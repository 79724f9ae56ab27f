import assert from "node:assert/strict";
import { test } from "node:test";
import { checkLimits, LOKI_DEFAULT_LIMITS } from "../../../src/sinks/loki/limits.ts";
import { T0_NS, entry } from "./support.ts";

const NOW_MS = Number(T0_NS / 1_000_000n) + 60_000;
const limits = { ...LOKI_DEFAULT_LIMITS, max_line_size: 100, max_line_size_truncate: false };

test("local validation: nothing refused sends the batch as it is, without a copy", () => {
  const batch = [entry(0), entry(1), entry(2)];
  const { send, refused } = checkLimits(batch, limits, NOW_MS);
  assert.equal(send, batch);
  assert.deepEqual(refused, []);
});

test("local validation: refusals anywhere leave the rest in order", () => {
  const long = (i: number) => entry(i, { line: "x".repeat(101) });
  for (const shape of [
    ["r", "x", "x"],
    ["x", "r", "x"],
    ["x", "x", "r"],
    ["r", "r", "x"],
    ["x", "r", "r"],
    ["r", "r", "r"],
  ]) {
    const batch = shape.map((c, i) => (c === "r" ? long(i) : entry(i)));
    const { send, refused } = checkLimits(batch, limits, NOW_MS);
    assert.deepEqual(
      send.map((e) => e.checkpoint.value),
      batch.filter((_, i) => shape[i] === "x").map((e) => e.checkpoint.value),
      shape.join(""),
    );
    assert.deepEqual(
      refused.map((r) => [r.entry.checkpoint.value, r.reason]),
      batch.filter((_, i) => shape[i] === "r").map((e) => [e.checkpoint.value, "line_too_long"]),
      shape.join(""),
    );
  }
});

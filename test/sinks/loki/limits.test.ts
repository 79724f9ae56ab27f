import assert from "node:assert/strict";
import { test } from "node:test";
import { checkLimits, LOKI_DEFAULT_LIMITS } from "../../../src/sinks/receiving-loki/limits.ts";
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

test("local validation: metadata is judged as the entry carries it at push, even if replaced after admission", () => {
  const small = entry(0, { meta: { level: "info" } });
  // Measured while small (the queue cost does this at admission), then decorated past both limits.
  assert.equal(small.metadataFields, 1);
  small.structuredMetadata = { level: "info", big: "y".repeat(70_000) };
  const many = entry(1);
  many.structuredMetadata = Object.fromEntries(Array.from({ length: 129 }, (_, i) => [`f${i}`, "v"]));
  const { send, refused } = checkLimits([small, many, entry(2)], LOKI_DEFAULT_LIMITS, NOW_MS);
  assert.deepEqual(
    refused.map((r) => [r.entry.checkpoint.value, r.reason, r.detail.split(":")[0]]),
    [
      [small.checkpoint.value, "metadata_too_large", "max_structured_metadata_size 65536"],
      [many.checkpoint.value, "metadata_too_large", "max_structured_metadata_entries_count 128"],
    ],
  );
  assert.equal(send.length, 1);
});

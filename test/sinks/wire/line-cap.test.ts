import { test } from "node:test";
import assert from "node:assert/strict";
import { capLines, truncateLine, truncationMarker } from "../../../src/sinks/wire/line-cap.ts";
import { entry, harness } from "../loki/support.ts";

const utf8 = (s: string): number => Buffer.byteLength(s, "utf8");

test("an over-cap line keeps a prefix plus the marker and never exceeds the cap", () => {
  const line = "a".repeat(500);
  const out = truncateLine(line, 500, 100);
  const marker = truncationMarker(500);
  assert.equal(marker, "…[truncated, original 500 bytes]");
  assert.ok(out.endsWith(marker));
  assert.equal(utf8(out), 100);
  assert.equal(out, "a".repeat(100 - utf8(marker)) + marker);
});

test("the cut never splits a multi-byte character", () => {
  const marker = truncationMarker(3 * 200);
  // 200 × "€" (3 bytes each); room for the prefix is cap - marker bytes.
  for (const cap of [utf8(marker) + 1, utf8(marker) + 2, utf8(marker) + 3, utf8(marker) + 7]) {
    const out = truncateLine("€".repeat(200), 600, cap);
    const prefix = out.slice(0, out.length - marker.length);
    assert.equal(prefix, "€".repeat(Math.floor((cap - utf8(marker)) / 3)), `cap ${cap}`);
    assert.ok(utf8(out) <= cap);
    assert.ok(!out.includes("\uFFFD"));
  }
  // Astral characters (4 bytes, surrogate pairs in JS) too.
  const astral = "😀".repeat(50);
  const out = truncateLine(astral, 200, utf8(truncationMarker(200)) + 6);
  assert.ok(out.startsWith("😀") && !out.includes("\uFFFD"));
  assert.equal(utf8(out), utf8(truncationMarker(200)) + 4);
});

test("a cap smaller than the marker hard-cuts without a marker", () => {
  assert.equal(truncateLine("abcdefghij".repeat(10), 100, 8), "abcdefgh");
  assert.equal(truncateLine("€€€€", 12, 5), "€"); // 5 bytes would split the second €
});

test("capLines rewrites in place, resets the memoised length, and is idempotent", () => {
  const e = entry(1, { line: "x".repeat(1000) });
  const small = entry(2, { line: "short" });
  const seen: number[] = [];
  capLines([e, small], 200, (t) => seen.push(t.lineBytes));
  assert.equal(e.lineBytes, 200);
  assert.ok(e.line.endsWith("[truncated, original 1000 bytes]"));
  assert.equal(small.line, "short");
  assert.deepEqual(seen, [200]);
  const once = e.line;
  capLines([e], 200, () => assert.fail("a capped line must not be capped again"));
  assert.equal(e.line, once);
  capLines([e], 0, () => assert.fail("0 disables the cap"));
});

test("the sink caps before pushing and counts sf2loki_lines_truncated by source", async (t) => {
  const { receiver, sink, metrics } = await harness(t, { batch: { max_line_bytes: 120 } });
  const fat = entry(1, { line: "y".repeat(5000), labels: { source: "apexlog", event_type: "apexlog" } });
  const thin = entry(2);
  await sink.push([fat, thin]);
  const lines = receiver.lines();
  assert.equal(lines.length, 2);
  assert.equal(utf8(lines[0]!), 120);
  assert.ok(lines[0]!.endsWith("[truncated, original 5000 bytes]"));
  assert.equal(lines[1], thin.line);
  assert.equal(await metrics.sum("sf2loki_lines_truncated", { source: "apexlog" }), 1);
  assert.equal(await metrics.sum("sf2loki_lines_truncated"), 1);
});

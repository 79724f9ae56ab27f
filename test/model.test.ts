import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEntry, msToNs, nsToNumber, sameLabelSet } from "../src/model.ts";

test("lineBytes is the UTF-8 length and follows a rewritten line", () => {
  const e = new LogEntry({
    timestampNs: 1n,
    labels: {},
    line: "héllo",
    checkpoint: { key: "k", value: "v" },
  });
  assert.equal(e.lineBytes, 6);
  e.line = "€";
  assert.equal(e.lineBytes, 3);
});

test("metadata size is counted once and follows a replaced map", () => {
  const e = new LogEntry({
    timestampNs: 1n,
    labels: {},
    line: "x",
    structuredMetadata: { user_id: "005", level: "info" },
    checkpoint: { key: "k", value: "v" },
  });
  assert.equal(e.metadataChars, "user_id".length + 3 + "level".length + 4);
  assert.equal(e.metadataFields, 2);
  e.structuredMetadata = { ...e.structuredMetadata, event_time: "2026-12-01T00:00:00.000Z" };
  assert.equal(e.metadataFields, 3);
  assert.equal(e.metadataChars, 19 + "event_time".length + 24);
  const bare = new LogEntry({ timestampNs: 1n, labels: {}, line: "", checkpoint: { key: "k", value: "v" } });
  assert.equal(bare.metadataFields, 0);
  assert.equal(bare.metadataChars, 0);
});

test("checkpoint-only entries carry nothing but the token", () => {
  const e = LogEntry.checkpointOnly({ key: "pubsub:/event/X", value: "AAA=" }, 5n);
  assert.equal(e.checkpointOnly, true);
  assert.equal(e.line, "");
  assert.deepEqual(e.labels, {});
  assert.equal(e.timestampNs, 5n);
});

test("msToNs keeps sub-millisecond precision exactly", () => {
  assert.equal(msToNs(1_700_000_000_123), 1_700_000_000_123_000_000n);
  assert.equal(msToNs(1.5), 1_500_000n);
});

test("sameLabelSet compares contents, not key order or identity", () => {
  assert.equal(sameLabelSet({ a: "1", b: "2" }, { b: "2", a: "1" }), true);
  assert.equal(sameLabelSet({}, {}), true);
  assert.equal(sameLabelSet({ a: "1" }, { a: "1", b: "2" }), false, "a subset is another set");
  assert.equal(sameLabelSet({ a: "1", b: "2" }, { a: "1" }), false, "a superset is another set");
  assert.equal(sameLabelSet({ a: "1", b: "2" }, { a: "1", c: "2" }), false);
  assert.equal(sameLabelSet({ a: "1" }, { a: "2" }), false);
  assert.equal(sameLabelSet({ a: "" }, { b: "" }), false);
});

test("nsToNumber is Number(): the nearest double, rounding cases, signs and int64's edges included", () => {
  const cases = [
    0n,
    1n,
    -1n,
    1_767_225_600_123_456_789n, // today's epoch in ns: not exactly representable
    1_767_225_600_000_000_513n, // rounds one way…
    1_767_225_600_000_000_511n, // …and the other
    2n ** 53n + 1n, // the first integer a double cannot hold
    2n ** 32n - 1n,
    2n ** 32n,
    -(2n ** 32n) - 7n,
    -1_767_225_600_123_456_789n,
    2n ** 63n - 1n,
    -(2n ** 63n),
    2n ** 63n, // outside int64: the generic conversion
    -(2n ** 70n),
  ];
  for (const ns of cases) assert.equal(nsToNumber(ns), Number(ns), String(ns));
  // And a sweep across a day of nanosecond timestamps with odd steps.
  for (let ns = 1_767_225_600_000_000_000n; ns < 1_767_312_000_000_000_000n; ns += 86_399_999_999_937n) {
    assert.equal(nsToNumber(ns), Number(ns), String(ns));
  }
});

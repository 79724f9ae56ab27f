import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { decodeLease, encodeLease } from "../../src/coordinate/object-lease/document.ts";

const T0 = Date.UTC(2026, 0, 1, 12);

describe("object lease document", () => {
  it("writes {holder, epoch, ttl_ms, renewed_at, acquired_at} and reads it back", () => {
    const record = { holder: "a", epoch: 4, ttlMs: 30_000, renewedAtMs: T0 + 500, acquiredAtMs: T0 };
    const bytes = encodeLease(record, 10_000);
    assert.deepEqual(JSON.parse(Buffer.from(bytes).toString()), {
      holder: "a",
      epoch: 4,
      ttl_ms: 30_000,
      renewed_at: "2026-01-01T12:00:00.500Z",
      acquired_at: "2026-01-01T12:00:00.000Z",
    });
    assert.deepEqual(decodeLease(bytes), { record });
  });

  it("a release keeps the epoch and empties the holder", () => {
    const bytes = encodeLease(
      { holder: "", epoch: 9, ttlMs: undefined, renewedAtMs: T0, acquiredAtMs: undefined },
      30_000,
    );
    assert.deepEqual(decodeLease(bytes), {
      record: { holder: "", epoch: 9, ttlMs: 30_000, renewedAtMs: T0, acquiredAtMs: undefined },
    });
  });

  it("a document without renewed_at reads as never renewed (claimable), not as live", () => {
    const decoded = decodeLease(Buffer.from(JSON.stringify({ holder: "x", epoch: 2, ttl_ms: 30_000 })));
    assert.ok("record" in decoded);
    assert.equal(decoded.record.renewedAtMs, undefined);
  });

  for (const [label, text, problem] of [
    ["not JSON", "{not json", /UTF-8 JSON/],
    ["not UTF-8", "\xff\xfe", /UTF-8 JSON/],
    ["an array", "[]", /object/],
    ["null", "null", /object/],
    ["no holder", '{"epoch":1,"ttl_ms":1}', /holder/],
    ["a negative epoch", '{"holder":"a","epoch":-1,"ttl_ms":1}', /epoch/],
    ["a fractional epoch", '{"holder":"a","epoch":1.5,"ttl_ms":1}', /epoch/],
    ["no ttl", '{"holder":"a","epoch":1}', /ttl_ms/],
    ["a zero ttl", '{"holder":"a","epoch":1,"ttl_ms":0}', /ttl_ms/],
  ] as const) {
    it(`${label} is not a lease document (claimable like an absent lease)`, () => {
      const bytes = label === "not UTF-8" ? Buffer.from([0xff, 0xfe]) : Buffer.from(text);
      const decoded = decodeLease(bytes);
      assert.ok("problem" in decoded);
      assert.match(decoded.problem, problem);
    });
  }
});

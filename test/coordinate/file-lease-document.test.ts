import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { parseLease, serializeLease } from "../../src/coordinate/file-lease/document.ts";

const TTL = 30_000;
const bytes = (s: string): Uint8Array => Buffer.from(s, "utf8");

describe("file lease document", () => {
  it("reads a lease written by the Python sf2loki (offset timestamp, no ttl or renewed_at)", () => {
    const parsed = parseLease(
      bytes('{"holder": "py-1", "expires_at": "2026-01-01T00:00:30.123456+00:00", "epoch": 4}'),
      TTL,
    );
    assert.ok("record" in parsed);
    assert.deepEqual(parsed.record, {
      holder: "py-1",
      epoch: 4,
      ttlMs: TTL,
      renewedAtMs: Date.UTC(2026, 0, 1, 0, 0, 30, 123) - TTL,
      acquiredAtMs: undefined,
    });
  });

  it("reads a naive timestamp as UTC and a missing or fractional epoch as 0", () => {
    for (const epoch of ["", ', "epoch": 2.5', ', "epoch": "7"']) {
      const parsed = parseLease(bytes(`{"holder": "x", "expires_at": "2026-01-01T00:00:30"${epoch}}`), TTL);
      assert.ok("record" in parsed);
      assert.equal(parsed.record.epoch, 0);
      assert.equal(parsed.record.renewedAtMs, Date.UTC(2026, 0, 1, 0, 0, 30) - TTL);
    }
  });

  it("reports anything that is not a lease document instead of throwing", () => {
    const cases: [Uint8Array, RegExp][] = [
      [bytes("{not json"), /JSON/],
      [new Uint8Array([0x7b, 0xff, 0x7d]), /UTF-8/],
      [bytes("[1]"), /array/],
      [bytes("null"), /null/],
      [bytes('{"holder": 3, "expires_at": "2026-01-01T00:00:00Z"}'), /holder/],
      [bytes('{"holder": "x", "expires_at": "soon"}'), /expires_at/],
    ];
    for (const [input, problem] of cases) {
      const parsed = parseLease(input, TTL);
      assert.ok("problem" in parsed);
      assert.match(parsed.problem, problem);
    }
  });

  it("round-trips, and a released lease already reads as expired", () => {
    const record = {
      holder: "",
      epoch: 3,
      ttlMs: TTL,
      renewedAtMs: Date.UTC(2026, 0, 1),
      acquiredAtMs: Date.UTC(2025, 11, 31),
    };
    const text = serializeLease(record, TTL);
    const doc = JSON.parse(text) as { expires_at: string; epoch: number; holder: string };
    assert.equal(doc.expires_at, "2026-01-01T00:00:00.000Z");
    const parsed = parseLease(bytes(text), TTL);
    assert.ok("record" in parsed);
    assert.deepEqual(parsed.record, record);
    const held = JSON.parse(serializeLease({ ...record, holder: "a" }, TTL)) as { expires_at: string };
    assert.equal(held.expires_at, "2026-01-01T00:00:30.000Z");
  });
});

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { pyStr } from "../../src/egress/transforms-python.ts";
import { parseSfTimestampNs, soqlDatetime } from "../../src/salesforce/soql-datetime.ts";
import { canonicalJson, rowRenderer } from "../../src/sources/shaping/json.ts";
import { deriveLevel } from "../../src/sources/shaping/level.ts";
import { routeFields } from "../../src/sources/shaping/metadata.ts";
import { shouldKeep } from "../../src/sources/shaping/sample.ts";
import { pickTimestamp, timestampOf } from "../../src/sources/shaping/timestamp.ts";
import { PyFloat } from "../../src/util/py-float.ts";

const ns = (iso: string): bigint => BigInt(Date.parse(iso)) * 1_000_000n;

describe("shaping: canonical JSON line", () => {
  it("matches Python's json.dumps(sort_keys=True) byte for byte", () => {
    // Expected text produced by CPython 3 for the same payload (g a float, as Avro double 1e21).
    const payload = {
      b: 1,
      a: "é",
      c: [1.5, null, true],
      d: { z: '\n"\\\x7f' },
      e: "😀",
      f: 1e-7,
      g: new PyFloat(1e21),
      h: -0.5,
    };
    assert.equal(
      canonicalJson(payload),
      '{"a": "\\u00e9", "b": 1, "c": [1.5, null, true], "d": {"z": "\\n\\"\\\\\\u007f"}, "e": "\\ud83d\\ude00", "f": 1e-07, "g": 1e+21, "h": -0.5}',
    );
  });

  it("renders rows of one key set identically to the general path, falling back on new keys", () => {
    const render = rowRenderer(["B", "A", "C"]);
    const row = { A: "1", B: "é", C: "x" };
    assert.equal(render(row), canonicalJson(row));
    const partial = { A: "1", C: "x" };
    assert.equal(render(partial), canonicalJson(partial));
    const wider = { A: "1", B: "2", C: "3", _extra: "4,5" };
    assert.equal(render(wider), canonicalJson(wider));
  });
});

describe("shaping: level and routed metadata", () => {
  const cases: [Record<string, unknown>, string][] = [
    [{ EXCEPTION_MESSAGE: "boom" }, "error"],
    [{ ERROR_CODE: "n/a", REQUEST_STATUS: "S" }, "info"],
    [{ ERROR_CODE: " 0 ", STATUS_CODE: "503" }, "error"],
    [{ STATUS_CODE: "404" }, "warn"],
    [{ STATUS_CODE: "204" }, "info"],
    [{ STATUS_CODE: "abc", REQUEST_STATUS: "F" }, "warn"],
    [{ REQUEST_STATUS: "Success" }, "info"],
    [{ LOGIN_STATUS: "LOGIN_NO_ERROR" }, "info"],
    [{ LOGIN_STATUS: "LOGIN_ERROR_INVALID_PASSWORD" }, "warn"],
    [{ OPERATION_STATUS: "ok" }, "info"],
    [{ Status: "Attempt to de-reference a null object" }, "warn"],
    [{ Status: true }, "info"],
    [{ SESSION_LEVEL: "HIGH_ASSURANCE" }, "info"],
  ];
  for (const [payload, level] of cases) {
    it(`${JSON.stringify(payload)} is ${level}`, () => {
      assert.equal(deriveLevel(payload), level);
    });
  }

  it("routes configured fields present and non-null, Python-stringified, and always a level", () => {
    assert.deepEqual(routeFields({ a: true, b: null, c: 5, level: "x" }, ["a", "b", "c", "missing"]), {
      a: "True",
      c: "5",
      level: "info",
    });
  });

  it("stringifies like Python's str()", () => {
    assert.deepEqual(
      [pyStr(1e-7), pyStr(1.5), pyStr(true), pyStr(null), pyStr({ a: 1, b: [1, "x"] })],
      ["1e-07", "1.5", "True", "None", "{'a': 1, 'b': [1, 'x']}"],
    );
  });
});

describe("shaping: timestamps", () => {
  it("parses epoch ms, ISO forms with Z / +hh:mm / +hhmm / naive, and the ELF compact form", () => {
    const at = ns("2026-06-30T01:00:00.123Z");
    assert.equal(timestampOf(Date.parse("2026-06-30T01:00:00.123Z")), at);
    for (const s of [
      "2026-06-30T01:00:00.123Z",
      "2026-06-30T01:00:00.123+0000",
      "2026-06-30T03:00:00.123+02:00",
      "2026-06-29T20:00:00.123-0500",
      "2026-06-30T01:00:00.123",
      "2026-06-30 01:00:00.123",
      "20260630010000.123",
    ]) {
      assert.equal(timestampOf(s), at, s);
    }
    assert.equal(timestampOf("2026-06-30T01:00:00.123456789Z"), at + 456_789n);
    for (const bad of ["None", "", "2026-02-30T00:00:00Z", "2026-13-01", "yesterday", null, true]) {
      assert.equal(timestampOf(bad), undefined, String(bad));
    }
  });

  it("falls back to the stable instant, clamped to now - 5 min when older than an hour, else now", () => {
    const now = Date.parse("2026-01-01T12:00:00Z");
    assert.deepEqual(pickTimestamp({ a: "junk" }, ["a"], ns("2026-01-01T11:30:00Z"), now), {
      ns: ns("2026-01-01T11:30:00Z"),
      fellBack: true,
    });
    assert.equal(pickTimestamp({}, ["a"], ns("2026-01-01T09:00:00Z"), now).ns, ns("2026-01-01T11:55:00Z"));
    assert.equal(pickTimestamp({}, [], undefined, now).ns, ns("2026-01-01T12:00:00Z"));
    assert.deepEqual(pickTimestamp({ b: "2026-01-01T10:00:00Z" }, ["a", "b"], undefined, now), {
      ns: ns("2026-01-01T10:00:00Z"),
      fellBack: false,
    });
  });

  it("normalises stored timestamps into SOQL literals and refuses anything else", () => {
    assert.equal(soqlDatetime("2026-06-30T01:00:00.000+0000"), "2026-06-30T01:00:00.000Z");
    assert.equal(soqlDatetime("2026-06-30T03:00:00+02:00"), "2026-06-30T01:00:00.000Z");
    assert.equal(soqlDatetime("2026-06-30T01:00:00Z"), "2026-06-30T01:00:00.000Z");
    assert.throws(() => soqlDatetime("2026-01-01T00:00:00Z OR Id != null"), { code: "SF2LOKI_SOQL_LITERAL" });
    assert.equal(parseSfTimestampNs("2024-02-29T00:00:00Z"), ns("2024-02-29T00:00:00Z"));
  });
});

describe("shaping: deterministic sampling", () => {
  it("agrees with the Python implementation's buckets", () => {
    // Buckets from CPython: sim-API-0 -> 8723, 0YqSIM000000000001 -> 1394, abc -> 74.
    assert.equal(shouldKeep("sim-API-0", 0.8723), false);
    assert.equal(shouldKeep("sim-API-0", 0.8724), true);
    assert.equal(shouldKeep("0YqSIM000000000001", 0.1394), false);
    assert.equal(shouldKeep("0YqSIM000000000001", 0.1395), true);
    assert.equal(shouldKeep("abc", 0.0075), true);
    assert.equal(shouldKeep("anything", 1), true);
  });
});

// Python's number spelling (repr/json.dumps) for the values the decoders hand to shaping, and the
// SOQL JSON parse that keeps Python's int/float distinction.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { compileTransforms, hashValue } from "../../src/egress/transforms.ts";
import { pyStr } from "../../src/egress/transforms-python.ts";
import { parsePythonJson } from "../../src/salesforce/rest-json.ts";
import { canonicalJson } from "../../src/sources/shaping/json.ts";
import { PyFloat, pyFloatRepr } from "../../src/util/py-float.ts";

describe("pyFloatRepr = Python repr(float)", () => {
  const table: [number, string][] = [
    [37, "37.0"],
    [0, "0.0"],
    [-0, "-0.0"],
    [1e16, "1e+16"],
    [1.5e17, "1.5e+17"],
    [9999999999999998, "9999999999999998.0"],
    [0.5, "0.5"],
    [0.0001, "0.0001"],
    [0.00001, "1e-05"],
    [1.5e-7, "1.5e-07"],
    [1e22, "1e+22"],
    [123456.789, "123456.789"],
    [NaN, "nan"],
    [-Infinity, "-inf"],
  ];
  for (const [n, want] of table) {
    it(`${String(n)} -> ${want}`, () => {
      assert.equal(pyFloatRepr(n), want);
    });
  }

  it("plain whole numbers are Python ints; boxed ones floats, in lines, str() and lists", () => {
    assert.equal(
      canonicalJson({ a: 37, b: new PyFloat(37), c: [new PyFloat(0), 2] }),
      '{"a": 37, "b": 37.0, "c": [0.0, 2]}',
    );
    assert.equal(pyStr(new PyFloat(37)), "37.0");
    assert.equal(pyStr([new PyFloat(1), 1]), "[1.0, 1]");
    assert.equal(pyStr(1e21), "1000000000000000000000");
    assert.equal(canonicalJson(0.00001), "1e-05");
  });

  it("hashes a whole float as Python does: sha256(salt + '37.0')", () => {
    const t = compileTransforms([{ action: "hash", fields: ["Lat"] }], { source: "pubsub", salt: "s" });
    const p: Record<string, unknown> = { Lat: new PyFloat(37) };
    t.apply(p);
    assert.equal(p.Lat, hashValue("s", "37.0"));
  });
});

describe("parsePythonJson", () => {
  it("keeps 37.0 a float, 37 an int, exponents floats and big integers exact", () => {
    const v = parsePythonJson(
      '{"a": 37.0, "b": 37, "c": 1e2, "d": 12345678901234567890, "e": -0.0, "f": 0.25}',
    ) as Record<string, unknown>;
    assert.ok(v.a instanceof PyFloat);
    assert.equal(v.b, 37);
    assert.ok(v.c instanceof PyFloat);
    assert.equal(v.d, 12345678901234567890n);
    assert.equal(
      canonicalJson(v),
      '{"a": 37.0, "b": 37, "c": 100.0, "d": 12345678901234567890, "e": -0.0, "f": 0.25}',
    );
  });

  it("takes the fast parse only when no number token needs the reviver", () => {
    // Timestamps and Ids carry `.000` and long digit runs inside strings: not number tokens.
    const body =
      '{"records": [{"EventDate": "2024-05-01T12:34:56.000+0000", "Id": "0Yw0000000000000001", "n": 3}]}';
    const v = parsePythonJson(body) as { records: Record<string, unknown>[] };
    assert.deepEqual(v, JSON.parse(body));
    for (const text of ["[1.0]", '{"x":2.00 }', '{"x": 5E3}', "[-1.5e-3]", "[9007199254740993]"]) {
      const parsed = parsePythonJson(text) as unknown[] | Record<string, unknown>;
      const first = Array.isArray(parsed) ? parsed[0] : Object.values(parsed)[0];
      assert.ok(typeof first !== "number" || !Number.isInteger(first), `${text} went through the reviver`);
    }
  });
});

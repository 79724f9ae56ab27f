// The log line: canonical JSON, byte-identical to the Python sf2loki's
// `json.dumps(payload, sort_keys=True, default=str)`, so a replay (or a Python -> TS cut-over)
// produces identical lines and Loki collapses the duplicates. Floats keep Python's spelling because
// the decoders box a float-typed whole value as PyFloat (Avro from the schema, SOQL JSON from the
// number's text); a plain whole number is a Python int. One known difference (docs/sources.md):
// keys are ordered by UTF-16 unit, not code point, which differs only for astral-plane keys.

import { pyFiniteNumber } from "../../egress/transforms-python.ts";
import { PyFloat, pyFloatRepr } from "../../util/py-float.ts";

const NON_ASCII = /[\u007f-\uffff]/g;
const HAS_NON_ASCII = /[\u007f-\uffff]/;
/** Anything JSON or `ensure_ascii` would escape; most cells have none and are just quoted. */
// eslint-disable-next-line no-control-regex -- control characters are exactly what must be escaped
const NEEDS_ESCAPE = /["\\\u0000-\u001f\u007f-\uffff]/;

function escapeUnit(c: string): string {
  return `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;
}

/** A JSON string with Python's `ensure_ascii` escaping. */
export function jsonString(s: string): string {
  if (!NEEDS_ESCAPE.test(s)) return `"${s}"`;
  const q = JSON.stringify(s);
  return HAS_NON_ASCII.test(q) ? q.replace(NON_ASCII, escapeUnit) : q;
}

/** `jsonString(s)` without its quotes: `s` itself when nothing needs escaping. */
export function jsonStringBody(s: string): string {
  return NEEDS_ESCAPE.test(s) ? jsonString(s).slice(1, -1) : s;
}

function jsonNumber(n: number): string {
  if (Number.isNaN(n)) return "NaN";
  if (!Number.isFinite(n)) return n > 0 ? "Infinity" : "-Infinity";
  return pyFiniteNumber(n);
}

/** A boxed float is always finite and whole (NaN and infinities stay plain numbers). */
function jsonFloat(f: PyFloat): string {
  return Number.isFinite(f.value) ? pyFloatRepr(f.value) : jsonNumber(f.value);
}

export function canonicalJson(value: unknown): string {
  switch (typeof value) {
    case "string":
      return jsonString(value);
    case "number":
      return jsonNumber(value);
    case "boolean":
      return value ? "true" : "false";
    case "bigint":
      return value.toString();
    case "object": {
      if (value === null) return "null";
      if (value instanceof PyFloat) return jsonFloat(value);
      if (Array.isArray(value)) return `[${value.map(canonicalJson).join(", ")}]`;
      const obj = value as Record<string, unknown>;
      const keys = Object.keys(obj)
        .filter((k) => obj[k] !== undefined)
        .sort();
      let out = "{";
      for (let i = 0; i < keys.length; i++) {
        const k = keys[i]!;
        out += (i === 0 ? "" : ", ") + jsonString(k) + ": " + canonicalJson(obj[k]);
      }
      return out + "}";
    }
    default:
      return jsonString(String(value));
  }
}

/**
 * A renderer for rows that all share one key set (the columns of one CSV file): the keys are sorted
 * and escaped once, so a row costs one string escape per cell. A row holding a key outside the set
 * (a transform added one, `_extra`) falls back to `canonicalJson`.
 */
export function rowRenderer(columns: readonly string[]): (row: Record<string, unknown>) => string {
  const keys = [...new Set(columns)].sort();
  const known = new Set(keys);
  const prefixes = keys.map((k) => `${jsonString(k)}: `);
  return (row) => {
    let count = 0;
    for (const k in row) {
      if (!known.has(k)) return canonicalJson(row);
      count++;
    }
    let out = "{";
    let first = true;
    for (let i = 0; i < keys.length && count > 0; i++) {
      const v = row[keys[i]!];
      if (v === undefined) continue;
      count--;
      out += (first ? "" : ", ") + prefixes[i]! + (typeof v === "string" ? jsonString(v) : canonicalJson(v));
      first = false;
    }
    return out + "}";
  };
}

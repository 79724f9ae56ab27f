// Python's str() for the values a payload holds: what the Python sf2loki fed to hashes, masks,
// regexes, drop_row globs and structured metadata. Matching it keeps hashed pseudonyms and metadata
// identical across a Python -> TS cut-over.

import { PyFloat, pyFloatRepr, pyIntRepr } from "../util/py-float.ts";

/**
 * A finite plain number as Python prints it: a whole one was a Python `int` (a float-typed whole
 * value arrives boxed as PyFloat), a fractional one a `float`.
 */
export function pyFiniteNumber(n: number): string {
  return Number.isInteger(n) ? pyIntRepr(n) : pyFloatRepr(n);
}

function pyReprString(s: string): string {
  const quote = s.includes("'") && !s.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of s) {
    if (ch === "\\") out += "\\\\";
    else if (ch === quote) out += `\\${quote}`;
    else if (ch === "\n") out += "\\n";
    else if (ch === "\r") out += "\\r";
    else if (ch === "\t") out += "\\t";
    else if (ch < " " || ch === "\x7f") out += `\\x${ch.charCodeAt(0).toString(16).padStart(2, "0")}`;
    else out += ch;
  }
  return quote + out + quote;
}

/** Python `repr()`: how str() renders the items inside a list or dict. */
export function pyRepr(value: unknown): string {
  if (typeof value === "string") return pyReprString(value);
  if (Array.isArray(value)) return `[${value.map(pyRepr).join(", ")}]`;
  if (value instanceof PyFloat) return pyFloatRepr(value.value);
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pyReprString(k)}: ${pyRepr(v)}`)
      .join(", ")}}`;
  }
  return pyStr(value);
}

/** Python `str()`. A plain whole number is an int; a float-typed one arrives as PyFloat. */
export function pyStr(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value;
    case "boolean":
      return value ? "True" : "False";
    case "number":
      return Number.isInteger(value) ? pyIntRepr(value) : pyFloatRepr(value);
    case "bigint":
      return value.toString();
    case "undefined":
      return "None";
    case "object":
      if (value instanceof PyFloat) return pyFloatRepr(value.value);
      return value === null ? "None" : pyRepr(value);
    default:
      return String(value);
  }
}

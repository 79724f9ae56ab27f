// Python's str() for the values a payload holds: what the Python sf2loki fed to hashes, masks,
// regexes, drop_row globs and structured metadata. Matching it keeps hashed pseudonyms and metadata
// identical across a Python -> TS cut-over.

/** A finite number as Python prints it: shortest round-trip digits, two-digit exponents (`1e-07`). */
export function pyFiniteNumber(n: number): string {
  const s = String(n);
  const exp = /e([+-])(\d)$/.exec(s);
  return exp ? `${s.slice(0, exp.index)}e${exp[1]}0${exp[2]}` : s;
}

/** Python `repr(float)`. */
function pyFloat(n: number): string {
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  return pyFiniteNumber(n);
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
  if (value !== null && typeof value === "object") {
    return `{${Object.entries(value)
      .map(([k, v]) => `${pyReprString(k)}: ${pyRepr(v)}`)
      .join(", ")}}`;
  }
  return pyStr(value);
}

/** Python `str()`. JSON cannot tell 1.0 from 1, so integral numbers print as ints. */
export function pyStr(value: unknown): string {
  switch (typeof value) {
    case "string":
      return value;
    case "boolean":
      return value ? "True" : "False";
    case "number":
      return Number.isInteger(value) ? String(value) : pyFloat(value);
    case "bigint":
      return value.toString();
    case "undefined":
      return "None";
    case "object":
      return value === null ? "None" : pyRepr(value);
    default:
      return String(value);
  }
}

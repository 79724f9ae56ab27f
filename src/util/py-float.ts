// A Python float that JavaScript would print as an integer. A JS number cannot remember that it was
// `37.0` (Avro `double`, or a JSON `37.0`), yet the Python sf2loki prints it `37.0` in the line and
// in structured metadata. Only whole values (and -0.0) are boxed: a fractional number prints the
// same in both languages (see pyFloatRepr), so the common case stays a plain number and costs no
// allocation.

export class PyFloat {
  readonly value: number;

  constructor(value: number) {
    this.value = value;
  }

  /** Arithmetic and comparisons (`>`, `Number(x)`) see the number. */
  valueOf(): number {
    return this.value;
  }

  /** Python `repr(float)`: what `json.dumps` and `str()` print. */
  toString(): string {
    return pyFloatRepr(this.value);
  }

  toJSON(): number {
    return this.value;
  }
}

/** The value a float-typed source field decoded to: boxed when JS would drop its `.0`. */
export function pyFloatValue(n: number): number | PyFloat {
  return Number.isInteger(n) ? new PyFloat(n) : n;
}

/** A float-typed value's plain number, whether boxed or not. */
export function numberOf(v: number | PyFloat): number {
  return typeof v === "number" ? v : v.value;
}

/** Python's exponent spelling: at least two digits (`1e-05`, `1e+16`). */
function pyExponent(s: string): string {
  const exp = /e([+-])(\d)$/.exec(s);
  return exp ? `${s.slice(0, exp.index)}e${exp[1]}0${exp[2]}` : s;
}

/**
 * Python `repr(float)` for a finite number: the shortest round-trip digits (the same digits JS
 * picks), in positional notation for 1e-4 <= |n| < 1e16 and scientific outside it (JS switches at
 * 1e-6 and 1e21), always with a `.0` when positional and whole.
 */
export function pyFloatRepr(n: number): string {
  if (Number.isNaN(n)) return "nan";
  if (!Number.isFinite(n)) return n > 0 ? "inf" : "-inf";
  if (n === 0) return Object.is(n, -0) ? "-0.0" : "0.0";
  const abs = Math.abs(n);
  if (abs >= 1e16 || abs < 1e-4) return pyExponent(n.toExponential());
  const s = String(n);
  return Number.isInteger(n) ? `${s}.0` : s;
}

/** A Python `int` held in a JS number: all its digits, never JS's `1e+21`. */
export function pyIntRepr(n: number): string {
  return Math.abs(n) < 1e21 ? String(n) : BigInt(n).toString();
}

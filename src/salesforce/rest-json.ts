// JSON with Python's number types. The Python sf2loki read SOQL records with `json.loads`, which
// keeps `37.0` a float (printed `37.0` again) and `37` an int, and holds any integer exactly. JS
// numbers forget the first and round the second, so records whose values reach a Loki line are
// parsed with a reviver that reads each number's source text (`context.source`, Node >= 21): a
// whole float is boxed as PyFloat, an integer beyond 2^53 becomes a bigint.
//
// A reviver makes JSON.parse several times slower, and most bodies need none of it, so one scan
// for a number token that could need it (`x.0`, an exponent, 16+ digits) decides first. A hit
// inside a string only costs the slow parse; a miss is impossible for a token that matters.
import { PyFloat } from "../util/py-float.ts";

const MAY_NEED_REVIVER = /[:,[]\s*-?\d+(?:\.0+\s*[,}\]]|(?:\.\d+)?[eE]|\d{15,}\s*[,}\]])/;
const FLOAT_TEXT = /[.eE]/;

interface ReviverContext {
  source?: string;
}

function revive(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value !== "number") return value;
  const source = context?.source;
  if (source === undefined) return value;
  if (FLOAT_TEXT.test(source)) return Number.isInteger(value) ? new PyFloat(value) : value;
  return Number.isSafeInteger(value) ? value : BigInt(source);
}

/** `JSON.parse` whose numbers keep the type Python's `json.loads` gives them. */
export function parsePythonJson(text: string): unknown {
  return MAY_NEED_REVIVER.test(text) ? JSON.parse(text, revive) : JSON.parse(text);
}

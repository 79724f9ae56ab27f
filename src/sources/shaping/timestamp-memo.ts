// Entry timestamps for a run of rows that share their seconds: an EventLogFile's rows are written in
// time order, thousands to a second, so the date-time down to the second is parsed once (regex,
// Date.UTC, the calendar check) and each row adds only its milliseconds. Anything outside the two
// fixed-width forms below, or a new second, goes through `timestampOf`, so the results are identical.
import { timestampOf } from "./timestamp.ts";

const NS_PER_MS = 1_000_000n;
const DOT = 46;
const ZED = 90;

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` (TIMESTAMP_DERIVED): the seconds are the first 19 characters. */
const ISO_MS = { length: 24, secondsEnd: 19 };
/** `yyyyMMddHHmmss.SSS` (TIMESTAMP): the seconds are the first 14 characters. */
const COMPACT_MS = { length: 18, secondsEnd: 14 };

/** Three ASCII digits at `at` as a number, or -1. */
function millisAt(text: string, at: number): number {
  const a = text.charCodeAt(at) - 48;
  const b = text.charCodeAt(at + 1) - 48;
  const c = text.charCodeAt(at + 2) - 48;
  if (a < 0 || a > 9 || b < 0 || b > 9 || c < 0 || c > 9) return -1;
  return a * 100 + b * 10 + c;
}

/** The fixed-width form `text` has (seconds, a dot, three digits of milliseconds), or undefined. */
function formOf(text: string): typeof ISO_MS | undefined {
  if (text.length === ISO_MS.length) {
    return text.charCodeAt(ISO_MS.secondsEnd) === DOT && text.charCodeAt(23) === ZED ? ISO_MS : undefined;
  }
  if (text.length === COMPACT_MS.length) {
    return text.charCodeAt(COMPACT_MS.secondsEnd) === DOT ? COMPACT_MS : undefined;
  }
  return undefined;
}

export class TimestampMemo {
  /** The seconds part of the last fixed-width timestamp parsed, and its instant in ms. */
  #seconds = "";
  #secondsMs = 0;

  /** What `timestampOf(text)` returns, for one column of a run of rows. */
  parse(text: string | undefined): bigint | undefined {
    if (text === undefined) return undefined;
    const form = formOf(text);
    if (form === undefined) return timestampOf(text);
    const ms = millisAt(text, form.secondsEnd + 1);
    if (ms < 0) return timestampOf(text);
    if (this.#seconds.length === form.secondsEnd && text.startsWith(this.#seconds)) {
      return BigInt(this.#secondsMs + ms) * NS_PER_MS;
    }
    const ns = timestampOf(text);
    if (ns !== undefined) {
      this.#seconds = text.slice(0, form.secondsEnd);
      this.#secondsMs = Number(ns / NS_PER_MS) - ms;
    }
    return ns;
  }
}

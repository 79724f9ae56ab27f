// Salesforce timestamps in, nanoseconds and SOQL literals out. One parser serves the cursors here and
// the entry shaping in sources/, so a watermark and an entry timestamp never disagree.
import { Sf2LokiError } from "../errors.ts";

// ISO-8601 as Salesforce and operators write it: `Z`, `+hh:mm`, `+hhmm`, `+hh`, or naive (UTC).
const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?$/;
// The EventLogFile `TIMESTAMP` column: yyyyMMddHHmmss.SSS, UTC.
const COMPACT = /^(\d{4})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(?:\.(\d{1,9}))?$/;

const NS_PER_MS = 1_000_000n;

function toNs(
  y: string,
  mo: string,
  d: string,
  h: string | undefined,
  mi: string | undefined,
  s: string | undefined,
  frac: string | undefined,
  offsetMin: number,
): bigint | undefined {
  const year = +y;
  const month = +mo;
  const day = +d;
  const hour = h === undefined ? 0 : +h;
  const minute = mi === undefined ? 0 : +mi;
  const second = s === undefined ? 0 : +s;
  if (month < 1 || month > 12 || day < 1 || hour > 23 || minute > 59 || second > 59) return undefined;
  const ms = Date.UTC(year, month - 1, day, hour, minute, second);
  // Date.UTC rolls 31 February over into March; a real calendar date survives the round trip.
  if (day > 28 && new Date(ms).getUTCDate() !== day) return undefined;
  let ns = BigInt(ms - offsetMin * 60_000) * NS_PER_MS;
  if (frac !== undefined) ns += BigInt(frac.padEnd(9, "0"));
  return ns;
}

/** Nanoseconds since the epoch for an ISO-8601 or ELF compact timestamp string, else undefined. */
export function parseSfTimestampNs(text: string): bigint | undefined {
  const m = ISO.exec(text);
  if (m) {
    let offsetMin = 0;
    if (m[9] !== undefined) {
      const hh = +m[10]!;
      const mm = m[11] === undefined ? 0 : +m[11];
      if (hh > 23 || mm > 59) return undefined;
      offsetMin = (m[9] === "-" ? -1 : 1) * (hh * 60 + mm);
    }
    return toNs(m[1]!, m[2]!, m[3]!, m[4], m[5], m[6], m[7], offsetMin);
  }
  const c = COMPACT.exec(text);
  if (c) return toNs(c[1]!, c[2]!, c[3]!, c[4], c[5], c[6], c[7], 0);
  return undefined;
}

/** True when `text` is a timestamp a cursor may use. */
export function isValidTimestamp(text: unknown): text is string {
  return typeof text === "string" && parseSfTimestampNs(text) !== undefined;
}

/** `YYYY-MM-DDTHH:MM:SS.mmmZ` for an instant in nanoseconds (milliseconds, truncated). */
export function formatIsoMs(ns: bigint): string {
  return new Date(Number(ns / NS_PER_MS)).toISOString();
}

/** `YYYY-MM-DDTHH:MM:SSZ`: the form a lookback default is stored in (what upstream writes). */
export function formatIsoSeconds(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace(".000Z", "Z");
}

/**
 * A SOQL datetime literal (never quoted) for a stored Salesforce timestamp such as
 * `2026-06-30T01:00:00.000+0000`, which is not itself legal SOQL. Throws on anything that does not
 * parse: literals are unquoted, so an unchecked string here would be an injection.
 */
export function soqlDatetime(text: string): string {
  const ns = parseSfTimestampNs(text);
  if (ns === undefined) {
    throw new Sf2LokiError(
      "SF2LOKI_SOQL_LITERAL",
      `refusing to put ${JSON.stringify(text.slice(0, 80))} into a SOQL query: not a timestamp; this is a bug, please report it`,
    );
  }
  return formatIsoMs(ns);
}

export function nsToMs(ns: bigint): number {
  return Number(ns / NS_PER_MS);
}

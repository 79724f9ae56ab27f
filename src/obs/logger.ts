// pino, configured once. The machine formats speak the Python sf2loki's structlog dialect, so an
// operator's log pipeline keeps parsing after the swap: one record per line on stdout, the message
// under `event`, `level` in Python's words, an ISO-8601 UTC `timestamp`, then the fields. The human
// `text` format (stderr) is for a terminal.
import { pino, type Logger, type DestinationStream } from "pino";
import { withoutUserinfoIn } from "../util/userinfo.ts";

export type { Logger };

export type LogFormat = "json" | "logfmt" | "text";

export interface LoggerOptions {
  level?: string;
  /** `json` (default), `logfmt`, or `text` (human-readable). */
  format?: LogFormat;
  /** Defaults to stdout for `json`/`logfmt` (as structlog's PrintLogger), stderr for `text`. */
  destination?: DestinationStream;
  /** Without a destination: force stderr (a command whose stdout carries its own output). */
  stderr?: boolean;
}

const LEVEL_ALIASES: Record<string, string> = { warning: "warn", critical: "fatal" };

export function normaliseLevel(level: string): string {
  const lower = level.toLowerCase();
  return LEVEL_ALIASES[lower] ?? lower;
}

/** pino's level numbers in Python's logging words (trace has no Python twin: debug). */
const PY_LEVEL: Record<number, string> = {
  10: "debug",
  20: "debug",
  30: "info",
  40: "warning",
  50: "error",
  60: "critical",
};

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = normaliseLevel(opts.level ?? "info");
  const format = opts.format ?? "json";
  const destination =
    opts.destination ?? pino.destination({ fd: format === "text" || opts.stderr ? 2 : 1, sync: false });
  // pino renders its own JSON (numeric level, epoch time); the stream below re-renders each record
  // in the target dialect, so pino keeps its levels, child bindings and error serialisers.
  return pino(
    { level, base: undefined, timestamp: pino.stdTimeFunctions.epochTime },
    recordStream(destination, format),
  );
}

/** A logger that writes nothing: the default for library components constructed in tests. */
export const silentLogger: Logger = pino({ level: "silent" });

type Flushable = DestinationStream & { flush?: (cb?: (err?: Error) => void) => void };

function recordStream(out: Flushable, format: LogFormat): Flushable {
  return {
    // logger.flush() at shutdown reaches the real destination's buffer.
    flush(cb?: (err?: Error) => void): void {
      if (out.flush) out.flush(cb);
      else cb?.();
    },
    write(chunk: string): void {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(chunk) as Record<string, unknown>;
      } catch {
        out.write(chunk);
        return;
      }
      const { level, time, msg, ...fields } = rec;
      const word = (typeof level === "number" ? PY_LEVEL[level] : undefined) ?? "info";
      const timestamp = pyIsoTimestamp(typeof time === "number" ? time : Date.now());
      // A URL's password never reaches the log, whichever field or error message carries the URL.
      if (format === "text") out.write(withoutUserinfoIn(textLine(timestamp, word, msg, fields)));
      else {
        const ordered: [string, unknown][] = [
          ["event", msg ?? ""],
          ["level", word],
          ["timestamp", timestamp],
          ...Object.entries(fields),
        ];
        const line = format === "json" ? jsonLine(ordered) : logfmtLine(ordered);
        out.write(withoutUserinfoIn(line) + "\n");
      }
    },
  };
}

/** structlog's `TimeStamper(fmt="iso")` in UTC: microseconds and a `Z`. */
function pyIsoTimestamp(ms: number): string {
  return new Date(ms).toISOString().replace("Z", "000Z");
}

// Python's json.dumps: `", "` and `": "` separators and ASCII-only output.
const NON_ASCII = /[\u007f-\uffff]/g;
function pyJson(v: unknown): string {
  if (v === null || typeof v !== "object") {
    const s = v === undefined || typeof v === "function" ? "null" : JSON.stringify(v);
    return s.replace(NON_ASCII, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
  }
  if (Array.isArray(v)) return `[${v.map(pyJson).join(", ")}]`;
  return `{${Object.entries(v)
    .map(([k, x]) => `${pyJson(k)}: ${pyJson(x)}`)
    .join(", ")}}`;
}

function jsonLine(entries: [string, unknown][]): string {
  return `{${entries.map(([k, v]) => `${pyJson(k)}: ${pyJson(v)}`).join(", ")}}`;
}

/** structlog's LogfmtRenderer: `key=value`, quoted when the value holds a space, `=` or `"`. */
function logfmtLine(entries: [string, unknown][]): string {
  return entries.map(([k, v]) => `${k}=${logfmtValue(v)}`).join(" ");
}

function logfmtValue(v: unknown): string {
  if (v === null || v === undefined) return "";
  const s = typeof v === "string" ? v : typeof v === "boolean" ? String(v) : JSON.stringify(v);
  if (!/[\s="]/.test(s)) return s;
  return `"${s.replaceAll("\\", "\\\\").replaceAll('"', '\\"').replaceAll("\n", "\\n")}"`;
}

/** `2026-12-01T10:00:00.000000Z WARNING component/org: msg key=value`, for a terminal. */
function textLine(timestamp: string, level: string, msg: unknown, fields: Record<string, unknown>): string {
  const { component, org, ...rest } = fields;
  const where = [component, org].filter((x) => typeof x === "string").join("/");
  const pairs = Object.entries(rest).map(([k, v]) => `${k}=${logfmtValue(v)}`);
  const head = `${timestamp} ${level.toUpperCase().padEnd(8)} ${where ? where + ": " : ""}${String(msg)}`;
  return `${head} ${pairs.join(" ")}`.trimEnd() + "\n";
}

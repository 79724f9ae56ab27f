// pino, configured once. JSON by default (what log shippers want); logfmt or a human format when asked.
import { pino, type Logger, type DestinationStream } from "pino";

export type { Logger };

export interface LoggerOptions {
  level?: string;
  /** `json` (default), `logfmt`, or `text` (human-readable). */
  format?: "json" | "logfmt" | "text";
  destination?: DestinationStream;
}

const LEVEL_ALIASES: Record<string, string> = { warning: "warn", critical: "fatal" };

export function normaliseLevel(level: string): string {
  const lower = level.toLowerCase();
  return LEVEL_ALIASES[lower] ?? lower;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const level = normaliseLevel(opts.level ?? "info");
  const destination = opts.destination ?? pino.destination({ fd: 2, sync: false });
  const format = opts.format ?? "json";
  if (format === "json") {
    return pino(
      { level, base: { service: "sf2loki" }, timestamp: pino.stdTimeFunctions.isoTime },
      destination,
    );
  }
  return pino(
    { level, base: undefined, timestamp: false, formatters: { level: (label) => ({ level: label }) } },
    textStream(destination, format),
  );
}

/** A logger that writes nothing: the default for library components constructed in tests. */
export const silentLogger: Logger = pino({ level: "silent" });

/** Re-renders pino's JSON lines as logfmt or as `LEVEL component: msg key=value` text. */
function textStream(out: DestinationStream, format: "logfmt" | "text"): DestinationStream {
  return {
    write(chunk: string): void {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(chunk) as Record<string, unknown>;
      } catch {
        out.write(chunk);
        return;
      }
      const { level, msg, component, org, ...rest } = rec;
      const time = new Date().toISOString();
      const pairs = Object.entries(rest).map(([k, v]) => `${k}=${logfmtValue(v)}`);
      if (format === "logfmt") {
        const head = [`time=${time}`, `level=${logfmtValue(level)}`];
        if (component !== undefined) head.push(`component=${logfmtValue(component)}`);
        if (org !== undefined) head.push(`org=${logfmtValue(org)}`);
        head.push(`msg=${logfmtValue(msg)}`);
        out.write([...head, ...pairs].join(" ") + "\n");
      } else {
        const where = [component, org].filter((x) => typeof x === "string").join("/");
        const lvl = typeof level === "string" ? level.toUpperCase() : "INFO";
        out.write(
          `${time} ${lvl.padEnd(5)} ${where ? where + ": " : ""}${String(msg)} ${pairs.join(" ")}`.trimEnd() +
            "\n",
        );
      }
    },
  };
}

function logfmtValue(v: unknown): string {
  const s = typeof v === "string" ? v : JSON.stringify(v);
  return /[\s"=]/.test(s) || s === "" ? JSON.stringify(s) : s;
}

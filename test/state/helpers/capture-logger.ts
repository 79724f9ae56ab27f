// A real pino logger whose lines land in an array, so tests can assert what an operator would see.
import { pino } from "pino";
import type { Logger } from "../../../src/obs/logger.ts";

export interface LogLine {
  level: number;
  msg: string;
  [key: string]: unknown;
}

export function captureLogger(): { logger: Logger; lines: LogLine[]; warnings: () => LogLine[] } {
  const lines: LogLine[] = [];
  const logger = pino({ level: "debug" }, { write: (s: string) => lines.push(JSON.parse(s) as LogLine) });
  return { logger, lines, warnings: () => lines.filter((l) => l.level === 40) };
}

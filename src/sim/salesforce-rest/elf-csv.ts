// Deterministic EventLogFile CSV bodies, generated lazily: a 1 000 000-row file is produced chunk by
// chunk as the socket drains and never sits in memory. Rows look like Salesforce's (every cell
// quoted, ~21 columns, ~330 bytes); REQUEST_ID of row n is `sim-<EventType>-<firstRow + n>`.
import { Readable } from "node:stream";
import { SIM_USERS, simUserId, simUserId15 } from "./users.ts";

export const ELF_COLUMNS = [
  "EVENT_TYPE",
  "TIMESTAMP",
  "REQUEST_ID",
  "ORGANIZATION_ID",
  "USER_ID",
  "RUN_TIME",
  "CPU_TIME",
  "URI",
  "SESSION_KEY",
  "LOGIN_KEY",
  "USER_TYPE",
  "REQUEST_STATUS",
  "DB_TOTAL_TIME",
  "CLIENT_IP",
  "BROWSER_TYPE",
  "API_TYPE",
  "API_VERSION",
  "METHOD",
  "ROWS_PROCESSED",
  "TIMESTAMP_DERIVED",
  "USER_ID_DERIVED",
] as const;

/** Rewrites row n: return other cells (wider or narrower rows) or a raw line (a corrupt row). */
export type RowCustomizer = (n: number, cells: string[]) => string[] | string;

export interface CsvShape {
  eventType: string;
  rows: number;
  /** Number of the first row in REQUEST_ID, so ids stay unique across a type's files. */
  firstRow?: number | undefined;
  /** Epoch ms of the first row; rows are spread evenly over `spanMs`. */
  startMs: number;
  spanMs: number;
  seed: number;
  customize?: RowCustomizer | undefined;
}

const URIS = [
  "/services/data/v60.0/query",
  "/services/data/v60.0/sobjects/Account",
  "/apex/Dashboard",
  "/home/home.jsp",
];
const STATUSES = ["S", "S", "S", "S", "S", "S", "S", "F", "S", "A"];
const BROWSERS = ["Chrome 126", "Firefox 127", "Safari 17", "Edge 126"];
const API_TYPES = ["R", "E", "P", "S"];
const METHODS = ["GET", "POST", "PATCH", "DELETE"];

/** A 32-bit mix of (seed, n): cheap, deterministic, good enough to vary the cells. */
function mix(seed: number, n: number): number {
  let h = Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) ^ Math.imul(n + 1, 0xc2b2ae35);
  h ^= h >>> 16;
  h = Math.imul(h, 0x7feb352d);
  h ^= h >>> 15;
  return h >>> 0;
}

function pad(n: number, width: number): string {
  return String(n).padStart(width, "0");
}

function compactTimestamp(iso: string): string {
  // 2026-01-01T10:00:00.123Z -> 20260101100000.123
  return `${iso.slice(0, 4)}${iso.slice(5, 7)}${iso.slice(8, 10)}${iso.slice(11, 13)}${iso.slice(14, 16)}${iso.slice(17, 23)}`;
}

/** The cells of row n, in ELF_COLUMNS order. */
export function rowCells(shape: CsvShape, n: number): string[] {
  const id = (shape.firstRow ?? 0) + n;
  const h = mix(shape.seed, id);
  const ms = shape.startMs + Math.floor((n * shape.spanMs) / Math.max(1, shape.rows));
  const iso = new Date(ms).toISOString();
  const userIndex = h % SIM_USERS;
  return [
    shape.eventType,
    compactTimestamp(iso),
    `sim-${shape.eventType}-${id}`,
    "00DSIM000000001",
    simUserId15(userIndex),
    String(h % 5000),
    String(h % 700),
    URIS[h % URIS.length]!,
    `sk${pad(h % 1_000_000, 6)}SIMSESSION`,
    `lk${pad((h >>> 8) % 100_000, 5)}SIMLOGIN`,
    "Standard",
    STATUSES[h % STATUSES.length]!,
    String((h >>> 4) % 90_000_000),
    `10.${(h >>> 24) & 255}.${(h >>> 16) & 255}.${(h >>> 8) & 255}`,
    BROWSERS[(h >>> 3) % BROWSERS.length]!,
    API_TYPES[(h >>> 5) % API_TYPES.length]!,
    "60.0",
    METHODS[(h >>> 7) % METHODS.length]!,
    String((h >>> 9) % 2000),
    iso,
    simUserId(userIndex),
  ];
}

function csvLine(cells: readonly string[]): string {
  let line = "";
  for (let i = 0; i < cells.length; i++) {
    const c = cells[i]!;
    line += (i === 0 ? '"' : ',"') + (c.includes('"') ? c.replaceAll('"', '""') : c) + '"';
  }
  return line + "\n";
}

/** The body as a stream of ~64 KiB chunks, produced only as fast as the reader pulls. */
export function csvStream(shape: CsvShape): Readable {
  let n = -1; // -1 is the header
  return new Readable({
    read() {
      let chunk = "";
      while (chunk.length < 65_536 && n < shape.rows) {
        if (n < 0) chunk += csvLine(ELF_COLUMNS);
        else {
          const cells = rowCells(shape, n);
          const custom = shape.customize?.(n, cells) ?? cells;
          chunk += typeof custom === "string" ? custom : csvLine(custom);
        }
        n++;
      }
      this.push(chunk.length > 0 ? Buffer.from(chunk, "utf8") : null);
    },
  });
}

/** Approximate body length for `LogFileLength` (generating the file to measure it would defeat laziness). */
export function estimatedLength(rows: number): number {
  return 260 + rows * 352;
}

// An EventLogFile body as batches of rows, parsed as it arrives (RFC 4180: quoted fields may hold
// commas and newlines) with bounded memory: one read's rows in flight, never the file. Rows come out
// as raw cells in batches (one per 64 KiB of a read, at most), so the per-row cost is the parse
// and the shaping: no promise and no 20-key object per row unless a transform needs one.
import { CsvParser, CsvSyntaxError, QUOTED_HINT } from "./csv-parser.ts";
import { EventLogFileCsvError } from "./errors.ts";

/**
 * The most bytes parsed into one batch. A download that outruns the drain is read as everything
 * buffered at once (~130 KB, ~466 rows, in the simulated org's drains), and every row of a batch is
 * shaped before the first is queued: rows waited ~8 ms there, and lived ~27 ms to their push, long
 * enough to outlive two young-generation GCs. 64 KiB keeps them young (bench/README.md, "The CSV
 * batch and the drain's GC").
 */
export const BATCH_MAX_BYTES = 64 * 1024;

/** Per-field limit (fix #41: Python's csv default of 128 KiB rejected real Apex exception rows). */
export const MAX_FIELD_CHARS = 1_048_576;
/** Per-record limit, so an unbalanced quote cannot swallow the rest of a 1 GB file into memory. */
export const MAX_RECORD_CHARS = 16 * MAX_FIELD_CHARS;

/** A row as a map of column name to cell (what transforms and generic shaping work on). */
export type CsvRow = Record<string, string>;

/** Rows of at most BATCH_MAX_BYTES of a read as raw cells, plus the header (one array for every batch). */
export interface CsvBatch {
  header: readonly string[];
  rows: string[][];
}

/**
 * A copy of a cell that does not keep its chunk alive, for a cell kept past its batch (structured
 * metadata and labels wait in the lane until pushed). Cells are slices of their chunk's decoded text,
 * and V8 keeps all of that text (~64 KiB) while any slice of 13 or more characters of it lives:
 * detaching the two metadata cells of a row kept the daemon's 250k-row drain ~20 MiB lower in RSS.
 * Shorter strings are copies already.
 */
export function detached(cell: string): string {
  return cell.length < 13 ? cell : (" " + cell).slice(1);
}

/**
 * Header-driven row map: cells past the header go under `_extra` (joined with `,`), short rows are
 * padded with "".
 */
export function rowObject(header: readonly string[], cells: readonly string[]): CsvRow {
  const row: CsvRow = {};
  for (let i = 0; i < header.length; i++) row[header[i]!] = cells[i] ?? "";
  if (cells.length > header.length) row._extra = cells.slice(header.length).join(",");
  return row;
}

/** The operator's error: the parser's, with the column named from the header where it has one. */
function csvError(
  err: CsvSyntaxError,
  header: readonly string[] | undefined,
  where: string,
): EventLogFileCsvError {
  const detail =
    err.kind === "field-too-long" && header !== undefined
      ? `record ${err.record}: field ${header[err.column] ?? "_extra"} is longer than ${MAX_FIELD_CHARS} characters${err.quoted ? QUOTED_HINT : ""}`
      : err.message;
  return new EventLogFileCsvError(where, err.line, detail, err);
}

/**
 * Rows in batches, UTF-8 with invalid bytes replaced. Errors: whatever `body` throws (transport),
 * or EventLogFileCsvError naming the line. Rows parsed before an error are yielded first.
 */
export async function* csvRowBatches(body: AsyncIterable<Buffer>, where: string): AsyncGenerator<CsvBatch> {
  const parser = new CsvParser({ maxFieldChars: MAX_FIELD_CHARS, maxRecordChars: MAX_RECORD_CHARS });
  let header: string[] | undefined;
  let rows: string[][] = [];
  let failure: CsvSyntaxError | undefined;
  // One batch per call: the records parsed since the last one, the header taken off the first.
  const take = (): CsvBatch | undefined => {
    if (header === undefined) {
      if (rows.length === 0) return undefined;
      header = rows.shift();
    }
    if (rows.length === 0 || header === undefined) return undefined;
    const batch = { header, rows };
    rows = [];
    return batch;
  };
  const feed = (chunk: Buffer | undefined): void => {
    try {
      if (chunk === undefined) parser.end(rows);
      else parser.write(chunk, rows);
    } catch (err) {
      if (!(err instanceof CsvSyntaxError)) throw err;
      failure = err;
    }
  };
  for await (const chunk of body) {
    for (let at = 0; at < chunk.length; at += BATCH_MAX_BYTES) {
      feed(chunk.subarray(at, at + BATCH_MAX_BYTES));
      const batch = take();
      if (batch) yield batch;
      if (failure) throw csvError(failure, header, where);
    }
  }
  feed(undefined);
  const last = take();
  if (last) yield last;
  if (failure) throw csvError(failure, header, where);
}

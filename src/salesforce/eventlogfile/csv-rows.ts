// An EventLogFile body as batches of rows, parsed as it arrives (RFC 4180: quoted fields may hold
// commas and newlines) with bounded memory: one network chunk's rows in flight, never the file.
// Rows come out as raw cells in batches (one per network chunk), so the per-row cost is the parse
// and the shaping: no promise and no 20-key object per row unless a transform needs one.
import { finished } from "node:stream/promises";
import { CsvError, parse } from "csv-parse";
import { EventLogFileCsvError } from "./errors.ts";

/** Per-field limit (fix #41: Python's csv default of 128 KiB rejected real Apex exception rows). */
export const MAX_FIELD_CHARS = 1_048_576;
/** Per-record limit, so an unbalanced quote cannot swallow the rest of a 1 GB file into memory. */
const MAX_RECORD_CHARS = 16 * MAX_FIELD_CHARS;

/** A row as a map of column name to cell (what transforms and generic shaping work on). */
export type CsvRow = Record<string, string>;

/** Rows of one network chunk as raw cells, plus the file's header (the same array for every batch). */
export interface CsvBatch {
  header: readonly string[];
  rows: string[][];
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

function wrap(err: unknown, where: string): unknown {
  if (err instanceof CsvError) {
    return new EventLogFileCsvError(
      where,
      typeof err.lines === "number" ? err.lines : undefined,
      err.message,
      err,
    );
  }
  return err;
}

/**
 * Rows in batches, UTF-8 with invalid bytes replaced. Errors: whatever `body` throws (transport),
 * or EventLogFileCsvError naming the line. Rows parsed before an error are yielded first.
 */
export async function* csvRowBatches(body: AsyncIterable<Buffer>, where: string): AsyncGenerator<CsvBatch> {
  let header: string[] | undefined;
  let rows: string[][] = [];
  let records = 0;
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: MAX_RECORD_CHARS,
    // Records are collected here, synchronously inside write(), and kept out of the stream's buffer:
    // no per-record stream bookkeeping, and the rows before a parse error in the same chunk survive.
    on_record: (record: string[], info) => {
      records++;
      if (header === undefined) {
        header = record;
        return null;
      }
      for (let i = 0; i < record.length; i++) {
        if (record[i]!.length > MAX_FIELD_CHARS) {
          throw new EventLogFileCsvError(
            where,
            info.lines,
            `record ${records}: field ${header[i] ?? "_extra"} is longer than ${MAX_FIELD_CHARS} characters`,
          );
        }
      }
      rows.push(record);
      return null;
    },
  });
  parser.on("error", () => undefined); // surfaced through `parser.errored` and `finished()`
  parser.resume();
  const take = (): CsvBatch | undefined => {
    if (rows.length === 0 || header === undefined) return undefined;
    const batch = { header, rows };
    rows = [];
    return batch;
  };
  try {
    for await (const chunk of body) {
      parser.write(chunk);
      const batch = take();
      if (batch) yield batch;
      if (parser.errored) throw parser.errored;
    }
    parser.end();
    await finished(parser);
    const last = take();
    if (last) yield last;
  } catch (err) {
    throw wrap(err, where);
  } finally {
    parser.destroy();
  }
}

// The EventLogFile CSV parser alone (src/salesforce/eventlogfile/csv-parser.ts) against csv-parse, the
// parser it replaced, on the simulated org's API file: every cell quoted, 21 columns, ~330 bytes a row,
// in the ~64 KiB chunks the sim sends. Both parse the same in-memory chunks to arrays of cells, with
// csv-parse configured as csvRowBatches used it (records taken in on_record, no stream buffering).
// Rounds alternate the two; `ratio` is ours over csv-parse in rows/s, the median of per-round ratios.
//
// Usage: node bench/csv.ts [rows]     (default 200 000 rows, ~67 MB); prints one JSON line.
// Target (#15): ratio >= 3.
import { finished } from "node:stream/promises";
import { parse } from "csv-parse";
import { CsvParser } from "../src/salesforce/eventlogfile/csv-parser.ts";
import { csvStream } from "../src/sim/salesforce-rest/elf-csv.ts";

const ROWS = Number(process.argv[2] ?? 200_000);
const ROUNDS = 5;
const LIMITS = { maxFieldChars: 1_048_576, maxRecordChars: 16 * 1_048_576 };

async function body(rows: number): Promise<Buffer[]> {
  const chunks: Buffer[] = [];
  const shape = { eventType: "API", rows, startMs: Date.UTC(2026, 0, 1), spanMs: 3_600_000, seed: 7 };
  for await (const chunk of csvStream(shape)) chunks.push(chunk as Buffer);
  return chunks;
}

function ours(chunks: readonly Buffer[]): number {
  const parser = new CsvParser(LIMITS);
  let records = 0;
  let out: string[][] = [];
  for (const chunk of chunks) {
    parser.write(chunk, out);
    records += out.length;
    out = [];
  }
  parser.end(out);
  return records + out.length;
}

async function reference(chunks: readonly Buffer[]): Promise<number> {
  let records = 0;
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: LIMITS.maxRecordChars,
    on_record: () => {
      records++;
      return null;
    },
  });
  parser.resume();
  for (const chunk of chunks) parser.write(chunk);
  parser.end();
  await finished(parser);
  return records;
}

async function timed(run: () => number | Promise<number>): Promise<number> {
  const started = performance.now();
  const records = await run();
  const seconds = (performance.now() - started) / 1000;
  if (records !== ROWS + 1) throw new Error(`parsed ${records} records, expected ${ROWS + 1}`);
  return seconds;
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

const chunks = await body(ROWS);
const bytes = chunks.reduce((sum, c) => sum + c.length, 0);
await timed(() => ours(chunks)); // warm-up, both
await timed(() => reference(chunks));
const oursSeconds: number[] = [];
const refSeconds: number[] = [];
const ratios: number[] = [];
for (let round = 0; round < ROUNDS; round++) {
  const a = await timed(() => ours(chunks));
  const b = await timed(() => reference(chunks));
  oursSeconds.push(a);
  refSeconds.push(b);
  ratios.push(b / a);
}
const mbPerS = (s: number): number => Math.round((bytes / 1e6 / s) * 10) / 10;
const rowsPerS = (s: number): number => Math.round(ROWS / s);
console.log(
  JSON.stringify({
    rows: ROWS,
    mb: Math.round(bytes / 1e5) / 10,
    ours_mb_per_s: mbPerS(median(oursSeconds)),
    ours_rows_per_s: rowsPerS(median(oursSeconds)),
    csv_parse_mb_per_s: mbPerS(median(refSeconds)),
    csv_parse_rows_per_s: rowsPerS(median(refSeconds)),
    ratio: Math.round(median(ratios) * 100) / 100,
    ratio_spread: Math.round(((Math.max(...ratios) - Math.min(...ratios)) / median(ratios)) * 100) / 100,
    ratios: ratios.map((r) => Math.round(r * 100) / 100),
  }),
);

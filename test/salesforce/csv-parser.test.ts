// Differential test of our EventLogFile CSV parser against csv-parse, the parser it replaced (#15):
// the same bytes, cut into the same chunks, must give the same records, and the same error on the same
// line with the same rows before it. The reference below is csvRowBatches as it was with csv-parse.
// Deliberate differences (see csv-parser.ts) are asserted on our side only: line numbers when the
// input holds a CR, and the line of an over-long field (ours fails where the field starts).
import assert from "node:assert/strict";
import { finished } from "node:stream/promises";
import { describe, it } from "node:test";
import { CsvError, parse } from "csv-parse";
import { CsvParser, CsvSyntaxError } from "../../src/salesforce/eventlogfile/csv-parser.ts";
import {
  BATCH_MAX_BYTES,
  csvRowBatches,
  detached,
  MAX_FIELD_CHARS,
} from "../../src/salesforce/eventlogfile/csv-rows.ts";
import { EventLogFileCsvError } from "../../src/salesforce/eventlogfile/errors.ts";
import { seededRandom } from "../../src/util/prng.ts";

interface Outcome {
  /** Header first, then every row, across all batches. */
  records: string[][];
  error: EventLogFileCsvError | undefined;
}

async function* chunksOf(parts: readonly Buffer[]): AsyncGenerator<Buffer> {
  for (const part of parts) yield part;
  await Promise.resolve();
}

async function ours(parts: readonly Buffer[]): Promise<Outcome> {
  const records: string[][] = [];
  let header: readonly string[] | undefined;
  try {
    for await (const batch of csvRowBatches(chunksOf(parts), "test")) {
      if (header === undefined) records.push([...batch.header]);
      else assert.equal(batch.header, header, "the same header array in every batch");
      header = batch.header;
      records.push(...batch.rows);
    }
    return { records, error: undefined };
  } catch (err) {
    assert.ok(err instanceof EventLogFileCsvError, `expected EventLogFileCsvError, got ${String(err)}`);
    return { records, error: err };
  }
}

/** csvRowBatches as it was before #15, flattened: csv-parse with the same options and field check. */
async function reference(parts: readonly Buffer[]): Promise<Outcome> {
  const records: string[][] = [];
  const parser = parse({
    bom: true,
    relax_column_count: true,
    skip_empty_lines: true,
    max_record_size: 16 * MAX_FIELD_CHARS,
    on_record: (record: string[], info) => {
      if (records.length > 0 && record.some((f) => f.length > MAX_FIELD_CHARS)) {
        throw new EventLogFileCsvError("test", info.lines, "field too long");
      }
      records.push(record);
      return null;
    },
  });
  parser.on("error", () => undefined);
  parser.resume();
  // csvRowBatches yields nothing until there is a row: a lone header never comes out.
  const seen = (): string[][] => (records.length > 1 ? records : []);
  try {
    for (const part of parts) {
      parser.write(part);
      if (parser.errored) throw parser.errored;
    }
    parser.end();
    await finished(parser);
    return { records: seen(), error: undefined };
  } catch (err) {
    if (err instanceof EventLogFileCsvError) return { records: seen(), error: err };
    assert.ok(err instanceof CsvError, String(err));
    const line = typeof err.lines === "number" ? err.lines : undefined;
    return { records: seen(), error: new EventLogFileCsvError("test", line, err.message) };
  } finally {
    parser.destroy();
  }
}

/** Splits `bytes` at the given offsets. */
function splitAt(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const parts: Buffer[] = [];
  let from = 0;
  for (const cut of [...cuts].sort((a, b) => a - b)) {
    parts.push(bytes.subarray(from, cut));
    from = cut;
  }
  parts.push(bytes.subarray(from));
  return parts;
}

/** Whole, every two-way split, and one byte at a time. */
function chunkings(bytes: Buffer): Buffer[][] {
  const all = [[bytes], Array.from(bytes, (b) => Buffer.from([b]))];
  for (let cut = 1; cut < bytes.length; cut++) all.push(splitAt(bytes, [cut]));
  return all;
}

function describeInput(bytes: Buffer, parts: readonly Buffer[]): string {
  return `${JSON.stringify(bytes.toString("latin1"))} in chunks of ${parts.map((p) => p.length).join("+")}`;
}

/** Both parsers on the same chunks: same records, same failure; the line too when comparable. */
async function assertSame(
  bytes: Buffer,
  parts: readonly Buffer[],
  compareLine = !bytes.includes(13),
): Promise<Outcome> {
  const got = await ours(parts);
  const want = await reference(parts);
  const what = describeInput(bytes, parts);
  assert.deepEqual(got.records, want.records, what);
  assert.equal(
    got.error !== undefined,
    want.error !== undefined,
    `${what}: ${String(got.error ?? want.error)}`,
  );
  if (got.error && want.error && compareLine) assert.equal(got.error.line, want.error.line, `${what}: line`);
  return got;
}

const b = (...pieces: (string | number[])[]): Buffer =>
  Buffer.concat(pieces.map((p) => (typeof p === "string" ? Buffer.from(p, "utf8") : Buffer.from(p))));

const CORPUS: [string, Buffer][] = [
  ["all quoted, LF", b('"A","B"\n"1","2"\n"3","4"\n')],
  ["all quoted, CRLF", b('"A","B"\r\n"1","2"\r\n')],
  [
    "quoted commas, LF, CRLF, CR and doubled quotes",
    b('"A","B"\n"x,y","l1\nl2"\n"q""q","c\rr"\n"cr\r\nlf",""""\n'),
  ],
  ["a lone CR inside quotes", b('"A"\n"x\ry"\n"\r"\n')],
  ["unquoted fields", b("A,B\nfoo,bar baz\n1,\n")],
  ["empty lines, LF", b("A,B\n\n1,2\n\n\n3,4\n\n")],
  ["empty lines, CRLF", b("A\r\n\r\n1\r\n\r\n")],
  ["a whitespace line is a record", b("A\n \n")],
  ["short and long rows", b('"A","B","C"\n"1"\n"1","2","3","4","5"\n')],
  ["empty quoted fields", b('"A","B"\n"",""\n""\n')],
  ["final record without newline (unquoted)", b("A,B\n1,2")],
  ["final record without newline (quoted)", b('"A"\n"1"')],
  ["a trailing comma at the end of input", b("A,B\n1,")],
  ["only a header", b('"A","B"\n')],
  ["only a header, no newline", b("A,B")],
  ["only a BOM", b([0xef, 0xbb, 0xbf])],
  ["a BOM, then the header", b([0xef, 0xbb, 0xbf], '"EVENT_TYPE","ID"\n"Login","1"\n')],
  ["empty input", b("")],
  ["multi-byte characters", b('"A","B"\n"é€𝄞","日本"\nñ,"x"\n')],
  [
    "invalid UTF-8 replaced",
    b('"A"\n"x', [0xff], 'y"\n', [0xe2, 0x82], ",z\n", [0xf0, 0x9f, 0x98], '"\n"', [0x80], '"\n'),
  ],
  ["lone CR line endings", b('A,B\r1,2\r"3","4"\r')],
  ["CRLF fixed first: a lone LF is data", b("A,B\r\n1,2\n3\r\n")],
  ["LF fixed first: a CR before LF is data", b("A,B\n1,2\r\n3,4\n")],
  ["a doubled quote at the end of a field", b('"A"\n"x"""\n')],
  ["quote inside an unquoted field", b('A,B\n1,2\n3,x"y\n')],
  ["a character after a closing quote", b('"A","B"\n"1","2"\n"1"x,"2"\n')],
  ["a space after a closing quote", b('"A"\n"1" \n')],
  ["a quote left open at the end", b('"A"\n"1"\n"open\nmore\n')],
  ["a quote left open, no final newline", b('"A"\n"1"\n"open')],
  ["a doubled quote left open", b('"A"\n"a""')],
  ["CRLF fixed: a lone LF after a closing quote", b('"A"\r\n"1"\n')],
  ["LF fixed: a CR after a closing quote", b('"A"\n"1"\r\n')],
];

describe("CSV parser: same records and errors as csv-parse", () => {
  for (const [name, bytes] of CORPUS) {
    it(`${name}, in every chunking`, async () => {
      for (const parts of chunkings(bytes)) await assertSame(bytes, parts);
    });
  }

  it("errors name their line and come after the rows before them", async () => {
    const cases: [Buffer, number, number][] = [
      // input, our line, records before the error (the header included when a row came out)
      [b('A,B\n1,2\n3,x"y\n'), 3, 2],
      [b('"A","B"\n"1","2"\n"1"x,"2"\n'), 3, 2],
      [b('"A"\n"1"\n"open\nmore\n'), 4, 2],
      [b('"A"\r\n"1"\n'), 2, 0], // a lone header never comes out
      [b('"A"\r\n"x\r\ny"\r\n"1"\n'), 4, 2], // CRLF inside quotes is one line break (csv-parse: two)
    ];
    for (const [bytes, line, before] of cases) {
      for (const parts of chunkings(bytes)) {
        const got = await ours(parts);
        assert.equal(got.error?.line, line, describeInput(bytes, parts));
        assert.equal(got.error.code, "SF2LOKI_ELF_CSV");
        assert.equal(got.records.length, before, describeInput(bytes, parts));
      }
    }
  });

  it("an unclosed quote names the line where it opened", async () => {
    const got = await ours([b('"A"\n"1"\n"open\nmore\nstill\n')]);
    assert.match(got.error?.message ?? "", /quote opening field 1 of record 3 at line 3 is never closed/);
    assert.equal(got.error?.line, 5);
  });

  it("a field exactly at the limit passes; one over fails, naming the column and the rows before", async () => {
    const head = '"A","B"\n"1","2"\n';
    for (const quoted of [true, false]) {
      const cell = (n: number): string => (quoted ? `"${"x".repeat(n)}"` : "x".repeat(n));
      const atLimit = b(head, `${cell(MAX_FIELD_CHARS)},"y"\n`);
      const over = b(head, `"z",${cell(MAX_FIELD_CHARS + 1)}\n"3","4"\n`);
      for (const cuts of [[], [20], [1000, 70_000, 700_000], [atLimit.length - 3]]) {
        const ok = await assertSame(atLimit, splitAt(atLimit, cuts));
        assert.equal(ok.records[2]![0]!.length, MAX_FIELD_CHARS);
        const bad = await assertSame(over, splitAt(over, cuts), false);
        assert.equal(bad.error?.line, 3);
        assert.match(bad.error.message, /record 3: field B is longer than 1048576 characters/);
        assert.deepEqual(bad.records, [
          ["A", "B"],
          ["1", "2"],
        ]);
      }
    }
  });

  it("an over-long field past the header is reported as _extra", async () => {
    const got = await ours([b('"A"\n"1",', "x".repeat(MAX_FIELD_CHARS + 1), "\n")]);
    assert.match(got.error?.message ?? "", /field _extra is longer/);
  });
});

const QUOTED_BITS = ["a", "b", ",", '""', "\r", "\n", "\r\n", "é", "€", "𝄞", " ", "xyz"];
const PLAIN_BITS = ["a", "b", " ", "é", "€", "𝄞", "xyz", "0"];
const INVALID = [[0xff], [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0x80]];

/** A random CSV body: quoted and unquoted fields, odd line endings, and now and then a defect. */
function randomBody(random: () => number): Buffer {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)]!;
  const eol = random() < 0.5 ? "\n" : random() < 0.8 ? "\r\n" : "\r";
  const pieces: (string | number[])[] = [];
  if (random() < 0.2) pieces.push([0xef, 0xbb, 0xbf]);
  const records = 1 + Math.floor(random() * 8);
  for (let r = 0; r < records; r++) {
    const fields = 1 + Math.floor(random() * 5);
    for (let f = 0; f < fields; f++) {
      if (f > 0) pieces.push(",");
      const length = Math.floor(random() * 5);
      const quoted = random() < 0.7;
      if (quoted) pieces.push('"');
      for (let k = 0; k < length; k++) {
        if (random() < 0.05 && (r > 0 || f > 0 || k > 0 || quoted)) pieces.push(pick(INVALID));
        else pieces.push(pick(quoted ? QUOTED_BITS : PLAIN_BITS));
      }
      if (quoted) pieces.push('"');
    }
    if (r < records - 1 || random() < 0.7) pieces.push(random() < 0.05 ? pick(["\n", "\r\n", "\r"]) : eol);
    if (random() < 0.1) pieces.push(eol); // an empty line
  }
  // Now and then a defect: a stray quote, or a quote removed, somewhere.
  let text = b(...pieces);
  if (random() < 0.15) {
    const at = Math.floor(random() * (text.length + 1));
    text = Buffer.concat([text.subarray(0, at), Buffer.from('"'), text.subarray(at)]);
  } else if (random() < 0.1) {
    const at = text.indexOf(34, Math.floor(random() * text.length));
    if (at >= 0) text = Buffer.concat([text.subarray(0, at), text.subarray(at + 1)]);
  }
  return text;
}

describe("CSV parser: a seeded random corpus agrees with csv-parse", () => {
  it("3000 random bodies, each whole, in random chunks and one byte at a time", async () => {
    const random = seededRandom(0x5f2104);
    let errors = 0;
    for (let n = 0; n < 3000; n++) {
      const bytes = randomBody(random);
      const cuts = Array.from({ length: Math.floor(random() * 6) }, () =>
        Math.floor(random() * (bytes.length + 1)),
      );
      const chunkingsToTry = [[bytes], splitAt(bytes, cuts), Array.from(bytes, (x) => Buffer.from([x]))];
      for (const parts of chunkingsToTry) {
        const got = await assertSame(bytes, parts);
        if (got.error) errors++;
      }
    }
    // The corpus must exercise the error paths, not only the happy one.
    assert.ok(errors > 300, `only ${errors} erroring bodies`);
  });
});

describe("CSV parser: bounded work and memory", () => {
  it("a 16 MiB unbalanced quote in 4 KiB chunks is scanned once (no re-scan from the record start)", () => {
    const parser = new CsvParser({ maxFieldChars: 32 * 2 ** 20, maxRecordChars: 32 * 2 ** 20 });
    const out: string[][] = [];
    parser.write(Buffer.from('"A"\n"'), out);
    const chunk = Buffer.from("x,y\n".repeat(1024)); // 4 KiB
    const started = performance.now();
    for (let i = 0; i < 4096; i++) parser.write(chunk, out);
    assert.throws(
      () => {
        parser.end(out);
      },
      (err) =>
        err instanceof CsvSyntaxError && err.kind === "unclosed-quote" && err.line === 2 + 4096 * 1024 - 1,
    );
    const ms = performance.now() - started;
    // Linear is tens of ms; re-scanning from the record start would be ~8 G characters, minutes.
    assert.ok(ms < 3000, `took ${ms} ms`);
    assert.deepEqual(out, [["A"]]);
  });

  it("through csvRowBatches the same quote fails at the field limit, having read ~1 MiB of 16", async () => {
    const chunk = Buffer.from("x".repeat(16_384));
    let pulled = 0;
    async function* body(): AsyncGenerator<Buffer> {
      yield Buffer.from('"A"\n"1"\n"');
      for (let i = 0; i < 1024; i++) {
        pulled++;
        yield await Promise.resolve(chunk);
      }
    }
    const started = performance.now();
    await assert.rejects(
      async () => {
        for await (const batch of csvRowBatches(body(), "test")) assert.ok(batch.rows.length > 0);
      },
      (err) =>
        err instanceof EventLogFileCsvError && err.line === 3 && /field _extra|field A/.test(err.message),
    );
    assert.ok(pulled <= MAX_FIELD_CHARS / chunk.length + 1, `pulled ${pulled} chunks`);
    assert.ok(performance.now() - started < 3000);
  });
});

describe("CSV parser: batches of at most BATCH_MAX_BYTES", () => {
  it("one 1 MiB read comes out as batches of <= 64 KiB each, the same rows as csv-parse", async () => {
    // Quoted newlines and two-byte characters, so piece boundaries fall inside records and characters.
    const row = (i: number) => `${i},"näme ${i}","multi\nline ${"é".repeat(i % 7)}",${"x".repeat(90)}\n`;
    const rows = ["ID,NAME,NOTE,PAD\n"];
    for (let i = 0, size = 0; size < 2 ** 20; i++) size += Buffer.byteLength(rows[rows.push(row(i)) - 1]!);
    const bytes = Buffer.from(rows.join(""));
    const sizes: number[] = [];
    for await (const batch of csvRowBatches(chunksOf([bytes]), "test")) sizes.push(batch.rows.length);
    const rowBytes = Buffer.byteLength(row(0));
    assert.ok(sizes.length >= bytes.length / BATCH_MAX_BYTES, `${sizes.length} batches`);
    assert.ok(
      Math.max(...sizes) <= Math.ceil(BATCH_MAX_BYTES / rowBytes) + 1,
      `largest ${Math.max(...sizes)} rows`,
    );
    assert.deepEqual(await ours([bytes]), await reference([bytes]));
  });
});

describe("CSV parser: the record limit", () => {
  it("a record over its limit fails at the field that crosses it, in any chunking", () => {
    const bytes = b('"A"\n"1"\n"1234567890","1234567890",\n"1234567890","1234567890","123456"\n"z"\n');
    for (const parts of chunkings(bytes)) {
      const parser = new CsvParser({ maxFieldChars: 10, maxRecordChars: 25 });
      const out: string[][] = [];
      assert.throws(
        () => {
          for (const part of parts) parser.write(part, out);
          parser.end(out);
        },
        (err) =>
          err instanceof CsvSyntaxError &&
          err.kind === "record-too-long" &&
          err.line === 4 &&
          err.record === 4 &&
          err.column === 2,
        describeInput(bytes, parts),
      );
      assert.deepEqual(out, [["A"], ["1"], ["1234567890", "1234567890", ""]]);
    }
  });
});

describe("detached cells", () => {
  it("are equal to the cell, short or long", () => {
    const text = '"A","B"\n"short","a cell of more than thirteen characters"\n';
    const out: string[][] = [];
    const parser = new CsvParser({ maxFieldChars: 100, maxRecordChars: 1000 });
    parser.write(Buffer.from(text), out);
    for (const cell of out[1]!) assert.equal(detached(cell), cell);
  });
});

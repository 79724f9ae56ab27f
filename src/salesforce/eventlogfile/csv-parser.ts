// An incremental RFC 4180 parser for EventLogFile bodies: bytes in, records (arrays of cells) out.
// It replaces csv-parse on the ELF hot path (#15), where csv-parse spent ~8.8 µs a row building each
// field byte by byte in a resizable buffer and then decoding it. Here each network chunk is decoded
// once to a string, field ends are found with indexOf, and cells are slices of that string. Salesforce
// quotes every cell, so the quoted path is the tight one; unquoted cells take a plain char loop.
//
// Behaviour is csv-parse's with `bom`, `relax_column_count`, `skip_empty_lines` (the differential test
// in test/salesforce/csv-parser.test.ts holds the two together), including its record delimiter rule:
// the first unquoted CRLF, LF or lone CR fixes the file's delimiter, and the other two are ordinary
// characters from then on. Deliberate differences: line numbers count CRLF as one line break inside
// quoted fields too (csv-parse counts two), an over-long field fails as soon as it crosses the limit
// (csv-parse only at the end of its record), limits count UTF-16 code units, and a NUL after a closing
// quote is an error (csv-parse takes it as the start of more field).
//
// A record split across chunks is never re-scanned: the finished cells of the record and the decoded
// part of the field in progress are kept, and scanning resumes where the last chunk ended. At most two
// characters are held back, when the chunk ends where one more is needed to decide (a quote that may be
// the first of a doubled pair, a CR that may start a CRLF).

const QUOTE = 34;
const COMMA = 44;
const LF = 10;
const CR = 13;

/** Where the parser stands between two characters. */
const FIELD_START = 0; // before the first character of a field (also: an unquoted field with nothing yet)
const QUOTED = 1; // inside a quoted field; `field` holds its decoded content so far
const UNQUOTED = 2; // inside an unquoted field that has content; `field` holds it

/** The file's record delimiter, fixed by the first one seen outside quotes. */
const EOL_UNKNOWN = 0;
const EOL_LF = 1;
const EOL_CRLF = 2;
const EOL_CR = 3;

export interface CsvLimits {
  /** A field longer than this (in UTF-16 code units) is an error, raised as soon as it is crossed. */
  maxFieldChars: number;
  /** Same for the sum of a record's fields: an unbalanced quote cannot hold the rest of a file. */
  maxRecordChars: number;
}

/** What is wrong with the CSV, and where: `line` is 1-based, `record` counts the header as 1. */
export class CsvSyntaxError extends Error {
  readonly line: number;
  readonly record: number;
  /** 0-based index of the offending field in its record. */
  readonly column: number;
  /** The field opens with a quote (for a field too long: most likely an unbalanced one). */
  readonly quoted: boolean;
  readonly kind:
    "quote-in-unquoted" | "after-closing-quote" | "unclosed-quote" | "field-too-long" | "record-too-long";
  constructor(
    kind: CsvSyntaxError["kind"],
    line: number,
    record: number,
    column: number,
    message: string,
    quoted = false,
  ) {
    super(message);
    this.name = "CsvSyntaxError";
    this.kind = kind;
    this.line = line;
    this.record = record;
    this.column = column;
    this.quoted = quoted;
  }
}

/** What an over-long quoted field most often is, said where it is reported. */
export const QUOTED_HINT = " (it opens with a quote: an unbalanced one takes in the rest of the file)";

export class CsvParser {
  // Invalid bytes become U+FFFD; `stream: true` keeps a character split across chunks whole; a
  // leading UTF-8 BOM is dropped (ignoreBOM is false by default).
  private readonly decoder = new TextDecoder("utf-8");
  private readonly limits: CsvLimits;
  private state = FIELD_START;
  private eol = EOL_UNKNOWN;
  /** Finished cells of the record in progress, and the sum of their lengths. */
  private record: string[] = [];
  private recordChars = 0;
  /** Decoded content of the field in progress (QUOTED or UNQUOTED). */
  private field = "";
  /** Line on which the field in progress started, when that was in an earlier chunk. */
  private fieldStartLine = 1;
  /** Characters held back from the last chunk until the next one shows what follows them. */
  private carry = "";
  /** Records completed so far, the header included. */
  private records = 0;
  /** Line number of the first character of the text being parsed. */
  private line = 1;
  /** The last character counted into `line` was a CR (a LF right after it is the same break). */
  private lastWasCR = false;
  /** The input's last character, for the line of an unclosed quote. */
  private lastCode = -1;
  private ended = false;

  constructor(limits: CsvLimits) {
    this.limits = limits;
  }

  /**
   * Parses one chunk, appending each record it completes to `out`. Throws CsvSyntaxError; the records
   * completed before the error are in `out` by then. After an error the parser must not be used again.
   */
  write(chunk: Uint8Array, out: string[][]): void {
    const text = this.decoder.decode(chunk, { stream: true });
    if (text.length > 0 || this.carry.length > 0) this.parse(text, false, out);
  }

  /** Ends the input: flushes the decoder and completes the last record (one without a final newline). */
  end(out: string[][]): void {
    if (this.ended) return;
    this.ended = true;
    this.parse(this.decoder.decode(), true, out);
  }

  private parse(text: string, final: boolean, out: string[][]): void {
    const s = this.carry.length > 0 ? this.carry + text : text;
    this.carry = "";
    const n = s.length;
    if (n > 0) this.lastCode = s.charCodeAt(n - 1);
    const { maxFieldChars, maxRecordChars } = this.limits;
    let state = this.state;
    let record = this.record;
    let recordChars = this.recordChars;
    let field = this.field;
    // Where the field in progress started in `s`; -1 when it started in an earlier chunk.
    let fieldStart = state === FIELD_START ? 0 : -1;
    let i = 0; // next unconsumed character
    let held = 0; // characters at the end of `s` kept for the next chunk
    for (;;) {
      if (state === FIELD_START) {
        if (i >= n) break;
        fieldStart = i;
        if (s.charCodeAt(i) === QUOTE) {
          state = QUOTED;
          field = "";
          i++;
        } else {
          state = UNQUOTED;
          field = "";
        }
      }
      if (state === QUOTED) {
        const q = s.indexOf('"', i);
        if (q === -1) {
          field += i === 0 ? s : s.slice(i);
          break;
        }
        if (q + 1 >= n && !final) {
          // A quote as the chunk's last character: a doubled quote or the closing one; the next says.
          field += s.slice(i, q);
          held = 1;
          break;
        }
        const d = q + 1 < n ? s.charCodeAt(q + 1) : -1;
        if (d === QUOTE) {
          field += s.slice(i, q + 1);
          i = q + 2;
          continue;
        }
        const value = field.length === 0 ? s.slice(i, q) : field + s.slice(i, q);
        let next: number; // where the next field or record starts
        let endsRecord: boolean;
        if (d === COMMA) {
          next = q + 2;
          endsRecord = false;
        } else if (d === -1) {
          next = n;
          endsRecord = true;
        } else {
          const k = d === LF && this.eol === EOL_LF ? 1 : this.newlineAt(s, q + 1, final);
          if (k < 0) {
            // A CR as the chunk's last character after a closing quote: keep the quote too.
            field = value;
            held = n - q;
            break;
          }
          if (k === 0) throw this.afterClosingQuote(s, q, d, record.length);
          next = q + 1 + k;
          endsRecord = true;
        }
        if (value.length > maxFieldChars) throw this.fieldTooLong(s, fieldStart, record.length, true);
        recordChars += value.length;
        if (recordChars > maxRecordChars) throw this.recordTooLong(s, fieldStart, record.length);
        record.push(value);
        if (endsRecord) {
          out.push(record);
          this.records++;
          record = [];
          recordChars = 0;
        }
        field = "";
        state = FIELD_START;
        i = next;
        continue;
      }
      // UNQUOTED: up to the next comma or record delimiter; a quote here is an error.
      let j = i;
      let k = 0; // length of the record delimiter at j, when one ends the field
      for (; j < n; j++) {
        const c = s.charCodeAt(j);
        if (c === COMMA) break;
        if (c === QUOTE) throw this.quoteInUnquoted(s, j, record.length);
        if (c === LF || c === CR) {
          k = this.newlineAt(s, j, final);
          if (k !== 0) break;
        }
      }
      if (k < 0) {
        // A CR as the chunk's last character: it may be the first half of a CRLF.
        field += s.slice(i, j);
        if (field.length === 0) state = FIELD_START;
        held = n - j;
        break;
      }
      if (j >= n && !final) {
        field += s.slice(i, n);
        if (field.length === 0) state = FIELD_START;
        break;
      }
      const value = field.length === 0 ? s.slice(i, j) : field + s.slice(i, j);
      field = "";
      state = FIELD_START;
      if (j >= n) {
        // End of input: the last record has no final newline (an empty line there is no record).
        i = n;
        if (value.length === 0 && record.length === 0) break;
      } else {
        i = j + (k > 0 ? k : 1);
        // An empty line is skipped: no cells before the delimiter and nothing quoted.
        if (k > 0 && value.length === 0 && record.length === 0) continue;
      }
      if (value.length > maxFieldChars) throw this.fieldTooLong(s, fieldStart, record.length, false);
      recordChars += value.length;
      if (recordChars > maxRecordChars) throw this.recordTooLong(s, fieldStart, record.length);
      record.push(value);
      if (k > 0 || j >= n) {
        out.push(record);
        this.records++;
        record = [];
        recordChars = 0;
      }
    }
    if (final) {
      if (state === QUOTED) throw this.unclosedQuote(s, fieldStart, record.length);
      if (state === FIELD_START && record.length > 0) {
        // `a,` at the end of input: the record ends with an empty field.
        record.push("");
        out.push(record);
        this.records++;
        record = [];
        recordChars = 0;
      }
    } else if (state !== FIELD_START) {
      // Bounded memory: the field (and record) in progress fails as soon as it is over its limit.
      if (field.length > maxFieldChars)
        throw this.fieldTooLong(s, fieldStart, record.length, state === QUOTED);
      if (recordChars + field.length > maxRecordChars) throw this.recordTooLong(s, fieldStart, record.length);
      if (fieldStart >= 0) this.fieldStartLine = this.lineAt(s, fieldStart);
    }
    this.carry = held > 0 ? s.slice(n - held) : "";
    this.advanceLines(s, n - held);
    this.state = state;
    this.record = record;
    this.recordChars = recordChars;
    this.field = field;
  }

  /**
   * Length of the record delimiter at s[p] (1 or 2), 0 when the character there is an ordinary one,
   * -1 when `s` ends too soon to tell. The first delimiter seen fixes the file's, as csv-parse does.
   */
  private newlineAt(s: string, p: number, final: boolean): number {
    const c = s.charCodeAt(p);
    if (c === LF) {
      if (this.eol === EOL_UNKNOWN) this.eol = EOL_LF;
      return this.eol === EOL_LF ? 1 : 0;
    }
    if (c !== CR || this.eol === EOL_LF) return 0;
    if (this.eol === EOL_CR) return 1;
    if (p + 1 >= s.length) {
      if (!final) return -1;
      if (this.eol === EOL_CRLF) return 0;
      this.eol = EOL_CR;
      return 1;
    }
    const crlf = s.charCodeAt(p + 1) === LF;
    if (this.eol === EOL_UNKNOWN) this.eol = crlf ? EOL_CRLF : EOL_CR;
    else if (!crlf) return 0;
    return crlf ? 2 : 1;
  }

  /** Line breaks (CRLF, LF or a lone CR) in s[0, end), the one before s[0] taken into account. */
  private breaksBefore(s: string, end: number): number {
    let breaks = 0;
    for (let p = s.indexOf("\n"); p !== -1 && p < end; p = s.indexOf("\n", p + 1)) {
      if (!(p === 0 ? this.lastWasCR : s.charCodeAt(p - 1) === CR)) breaks++;
    }
    for (let p = s.indexOf("\r"); p !== -1 && p < end; p = s.indexOf("\r", p + 1)) breaks++;
    return breaks;
  }

  private lineAt(s: string, p: number): number {
    return this.line + this.breaksBefore(s, p);
  }

  /** Moves `line` past s[0, end): the characters not held back for the next chunk. */
  private advanceLines(s: string, end: number): void {
    if (end <= 0) return;
    this.line += this.breaksBefore(s, end);
    this.lastWasCR = s.charCodeAt(end - 1) === CR;
  }

  private startLine(s: string, fieldStart: number): number {
    return fieldStart >= 0 ? this.lineAt(s, fieldStart) : this.fieldStartLine;
  }

  private quoteInUnquoted(s: string, p: number, column: number): CsvSyntaxError {
    const record = this.records + 1;
    return new CsvSyntaxError(
      "quote-in-unquoted",
      this.lineAt(s, p),
      record,
      column,
      `field ${column + 1} of record ${record} is not quoted but holds a quote (a field with quotes must be quoted, its quotes doubled)`,
    );
  }

  private afterClosingQuote(s: string, q: number, code: number, column: number): CsvSyntaxError {
    const record = this.records + 1;
    return new CsvSyntaxError(
      "after-closing-quote",
      this.lineAt(s, q),
      record,
      column,
      `field ${column + 1} of record ${record} has ${JSON.stringify(String.fromCharCode(code))} after its closing quote, where a comma or a line end belongs`,
    );
  }

  private unclosedQuote(s: string, fieldStart: number, column: number): CsvSyntaxError {
    const record = this.records + 1;
    // csv-parse names the line of the input's last character; the opening line is the useful one.
    const endsWithBreak = this.lastCode === LF || this.lastCode === CR;
    const line = this.lineAt(s, s.length) - (endsWithBreak ? 1 : 0);
    return new CsvSyntaxError(
      "unclosed-quote",
      line,
      record,
      column,
      `the quote opening field ${column + 1} of record ${record} at line ${this.startLine(s, fieldStart)} is never closed`,
    );
  }

  private fieldTooLong(s: string, fieldStart: number, column: number, quoted: boolean): CsvSyntaxError {
    const record = this.records + 1;
    return new CsvSyntaxError(
      "field-too-long",
      this.startLine(s, fieldStart),
      record,
      column,
      `record ${record}: field ${column + 1} is longer than ${this.limits.maxFieldChars} characters${quoted ? QUOTED_HINT : ""}`,
      quoted,
    );
  }

  private recordTooLong(s: string, fieldStart: number, column: number): CsvSyntaxError {
    const record = this.records + 1;
    return new CsvSyntaxError(
      "record-too-long",
      this.startLine(s, fieldStart),
      record,
      column,
      `record ${record} is longer than ${this.limits.maxRecordChars} characters (at its field ${column + 1})`,
    );
  }
}

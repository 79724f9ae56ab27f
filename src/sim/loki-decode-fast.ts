// Reads a logproto.PushRequest straight off the wire: the simulated Loki's hot path, so no message
// objects, no int64 → string → BigInt round trip per timestamp, and no string made before it is read.
// Strict like Loki's generated Unmarshal: a truncated varint, a length past the end of its message, a
// known field with the wrong wire type or an invalid tag refuses the body (protobufjs skips a field
// of the wrong wire type as unknown); like protobufjs, so is a string field that is not UTF-8. loki-decode-reference.ts reads the same bytes with protobufjs;
// test/sim/loki-decode-fast.test.ts requires the two to agree. Field numbers: proto/loki_push.proto.
import { isUtf8 } from "node:buffer";
import { BodyDecodeError, type DecodedEntry, type DecodedStream } from "./loki-decoded.ts";

const NS_PER_S = 1_000_000_000n;

// Wire types.
const VARINT = 0;
const FIXED64 = 1;
const LEN = 2;
const START_GROUP = 3;
const END_GROUP = 4;
const FIXED32 = 5;

/** Groups nested deeper than this inside an unknown field are refused: skipping them recurses. */
const MAX_GROUP_DEPTH = 100;

// Node's direct slicer skips toString()'s encoding dispatch; the same bytes → the same string.
interface FastSlicer {
  utf8Slice(start: number, end: number): string;
}
const HAS_UTF8_SLICE = typeof (Buffer.prototype as unknown as Partial<FastSlicer>).utf8Slice === "function";

/**
 * Metadata names and short values repeat from entry to entry (`level`, `info`, a user id): a short
 * ASCII field is looked up by a hash of its bytes and the string already made for the same bytes is
 * reused, so the common pair costs no native call and no allocation. A slot holds the last string
 * hashed to it; a collision only costs a fresh string. The table keeps at most 4096 × 32 bytes alive.
 */
const INTERN_MAX_BYTES = 32;
const INTERN_SLOTS = 4096; // a power of two
const interned: string[] = new Array<string>(INTERN_SLOTS).fill("");

function utf8Slice(buf: Buffer, start: number, end: number): string {
  return HAS_UTF8_SLICE
    ? (buf as unknown as FastSlicer).utf8Slice(start, end)
    : buf.toString("utf8", start, end);
}

const EMPTY_METADATA: Readonly<Record<string, string>> = Object.freeze({});

/**
 * An entry that stays a view of the body until someone reads it: the timestamp stays two numbers
 * until a check asks for the BigInt (an age limit, the out-of-order window, a store that keeps
 * entries), and the line and metadata stay bytes until read (the poison rule, a store that keeps
 * entries, a limit the wire sizes cannot rule out). The body was fully checked when the entry was
 * made, so reading later cannot fail. Entries must not outlive the request: they hold its body.
 */
class WireEntry implements DecodedEntry {
  readonly lineBound: number;
  readonly metadataCountBound: number;
  readonly metadataLengthBound: number;
  readonly #buf: Buffer;
  /** The EntryAdapter message's bytes, re-read for the metadata. */
  readonly #start: number;
  readonly #end: number;
  readonly #lineStart: number;
  readonly #seconds: number;
  /** Set instead of #seconds when the seconds do not fit a double exactly (beyond ±2^53). */
  readonly #wideSeconds: bigint | undefined;
  readonly #nanos: number;
  #ns: bigint | undefined = undefined;
  #line: string | undefined = undefined;
  #metadata: Readonly<Record<string, string>> | undefined = undefined;

  constructor(
    buf: Buffer,
    start: number,
    end: number,
    lineStart: number,
    lineEnd: number,
    pairs: number,
    pairBytes: number,
  ) {
    this.#buf = buf;
    this.#start = start;
    this.#end = end;
    this.#lineStart = lineStart;
    this.lineBound = lineEnd - lineStart;
    this.metadataCountBound = pairs;
    this.metadataLengthBound = pairBytes;
    // The timestamp readEntry just read (module state, see readTimestamp).
    this.#seconds = seconds;
    this.#wideSeconds = wideSeconds;
    this.#nanos = nanos;
  }

  get timestampNs(): bigint {
    this.#ns ??= (this.#wideSeconds ?? BigInt(this.#seconds)) * NS_PER_S + BigInt(this.#nanos);
    return this.#ns;
  }

  get line(): string {
    this.#line ??=
      this.lineBound === 0 ? "" : utf8Slice(this.#buf, this.#lineStart, this.#lineStart + this.lineBound);
    return this.#line;
  }

  get metadata(): Readonly<Record<string, string>> {
    this.#metadata ??=
      this.metadataCountBound === 0 ? EMPTY_METADATA : readMetadata(this.#buf, this.#start, this.#end);
    return this.#metadata;
  }
}

/** The varint just read, as its low and high 32 bits (unsigned). */
let lo = 0;
let hi = 0;

/**
 * One decode pass over one body; `pos` moves forward only. Every read is bounded by the end of the
 * message it belongs to (`limit`), so a field cannot spill into its parent's next field.
 */
class WireReader {
  readonly buf: Buffer;
  pos = 0;
  /** The body's memory as 32-bit words, for the ASCII check; made on first use. */
  #words: Int32Array | undefined;

  constructor(buf: Buffer) {
    this.buf = buf;
  }

  /**
   * Refuses a string field whose bytes are not UTF-8, as protobufjs (proto3 verifies strings) does.
   * ASCII, the common case, is checked a word at a time in JS; anything else by node:buffer's isUtf8.
   */
  checkUtf8(start: number, end: number, what: string): void {
    const buf = this.buf;
    let i = start;
    if (end - start >= 32) {
      const base = buf.byteOffset;
      while (((base + i) & 3) !== 0) {
        if (buf[i]! >= 0x80) {
          this.checkUtf8Slow(start, end, what);
          return;
        }
        i++;
      }
      this.#words ??= new Int32Array(buf.buffer, 0, buf.buffer.byteLength >>> 2);
      const words = this.#words;
      const last = (base + end) >> 2;
      let any = 0;
      for (let w = (base + i) >> 2; w < last; w++) any |= words[w]!;
      if ((any & 0x80808080) !== 0) {
        this.checkUtf8Slow(start, end, what);
        return;
      }
      i = (last << 2) - base;
    }
    for (; i < end; i++)
      if (buf[i]! >= 0x80) {
        this.checkUtf8Slow(start, end, what);
        return;
      }
  }

  checkUtf8Slow(start: number, end: number, what: string): void {
    const buf = this.buf;
    if (!isUtf8(new Uint8Array(buf.buffer, buf.byteOffset + start, end - start))) {
      throw this.fail(`${what} is not valid UTF-8`, start);
    }
  }

  fail(what: string, at = this.pos): BodyDecodeError {
    return new BodyDecodeError(
      `protobuf decode error: ${what} at byte ${at} of ${this.buf.length}; the body is not a valid ` +
        "logproto.PushRequest (check the sender's encoder against proto/loki_push.proto)",
    );
  }

  /** Reads a varint of up to 10 bytes into lo/hi. */
  varint64(limit: number, what: string): void {
    const buf = this.buf;
    const start = this.pos;
    let pos = start;
    let b: number;
    lo = 0;
    hi = 0;
    for (let shift = 0; shift < 28; shift += 7) {
      if (pos >= limit) throw this.fail(`truncated varint (${what})`, start);
      b = buf[pos++]!;
      lo |= (b & 0x7f) << shift;
      if (b < 0x80) {
        lo >>>= 0;
        this.pos = pos;
        return;
      }
    }
    if (pos >= limit) throw this.fail(`truncated varint (${what})`, start);
    b = buf[pos++]!;
    lo = (lo | ((b & 0x7f) << 28)) >>> 0;
    hi = (b & 0x7f) >> 4;
    if (b < 0x80) {
      this.pos = pos;
      return;
    }
    for (let shift = 3; shift < 38; shift += 7) {
      if (pos >= limit) throw this.fail(`truncated varint (${what})`, start);
      b = buf[pos++]!;
      hi = (hi | ((b & 0x7f) << shift)) >>> 0;
      if (b < 0x80) {
        this.pos = pos;
        return;
      }
    }
    throw this.fail(`varint longer than 10 bytes (${what})`, start);
  }

  /** A tag or a length: unsigned, below 2^32 (anything longer is refused by the caller's bounds). */
  uint32(limit: number, what: string): number {
    const pos = this.pos;
    if (pos < limit) {
      const b = this.buf[pos]!;
      if (b < 0x80) {
        this.pos = pos + 1;
        return b;
      }
    }
    this.varint64(limit, what);
    if (hi !== 0) throw this.fail(`${what} ${hi * 2 ** 32 + lo} does not fit 32 bits`, pos);
    return lo;
  }

  /** The end of a length-delimited field that starts here; refused when it runs past `limit`. */
  delimited(limit: number, what: string): number {
    const at = this.pos;
    const len = this.uint32(limit, `${what} length`);
    const end = this.pos + len;
    if (end > limit) {
      throw this.fail(
        `${what} of ${len} bytes runs past the end of its message (${limit - this.pos} left)`,
        at,
      );
    }
    return end;
  }

  string(limit: number, what: string): string {
    const end = this.delimited(limit, what);
    const start = this.pos;
    if (start === end) return "";
    this.checkUtf8(start, end, what);
    return this.slice(start, end);
  }

  /** A metadata name or value (already checked as UTF-8): short ASCII ones through the intern table. */
  shortString(limit: number, what: string): string {
    const end = this.delimited(limit, what);
    const start = this.pos;
    const len = end - start;
    if (len === 0) {
      this.pos = end;
      return "";
    }
    if (len > INTERN_MAX_BYTES) return this.slice(start, end);
    const buf = this.buf;
    let h = len;
    for (let i = start; i < end; i++) {
      const c = buf[i]!;
      if (c >= 0x80) return this.slice(start, end);
      h = Math.imul(h ^ c, 0x01000193); // FNV-1a's prime
    }
    const slot = (h ^ (h >>> 16)) & (INTERN_SLOTS - 1);
    const known = interned[slot]!;
    this.pos = end;
    if (known.length === len) {
      let same = true;
      for (let i = 0; i < len; i++) {
        if (known.charCodeAt(i) !== buf[start + i]) {
          same = false;
          break;
        }
      }
      if (same) return known;
    }
    const fresh = this.slice(start, end);
    interned[slot] = fresh;
    return fresh;
  }

  slice(start: number, end: number): string {
    this.pos = end;
    return utf8Slice(this.buf, start, end);
  }

  /** Reads a tag; field 0 and the two undefined wire types are refused here. */
  tag(limit: number): number {
    const at = this.pos;
    const tag = this.uint32(limit, "field tag");
    if (tag >>> 3 === 0) throw this.fail("field number 0 in a tag", at);
    const wire = tag & 7;
    if (wire > FIXED32) throw this.fail(`invalid wire type ${wire}`, at);
    return tag;
  }

  expect(tag: number, wire: number, field: string, at: number): void {
    if ((tag & 7) !== wire) throw this.fail(`${field} has wire type ${tag & 7}, expected ${wire}`, at);
  }

  /** Skips the value of an unknown field (Loki's decoder skips them too). */
  skip(tag: number, limit: number, depth = 0): void {
    const at = this.pos;
    switch (tag & 7) {
      case VARINT:
        this.varint64(limit, `unknown field ${tag >>> 3}`);
        return;
      case FIXED64:
      case FIXED32: {
        const size = (tag & 7) === FIXED64 ? 8 : 4;
        if (this.pos + size > limit)
          throw this.fail(`truncated fixed${size * 8} (unknown field ${tag >>> 3})`, at);
        this.pos += size;
        return;
      }
      case LEN:
        this.pos = this.delimited(limit, `unknown field ${tag >>> 3}`);
        return;
      case START_GROUP: {
        if (depth >= MAX_GROUP_DEPTH) throw this.fail(`groups nested deeper than ${MAX_GROUP_DEPTH}`, at);
        for (;;) {
          if (this.pos >= limit) throw this.fail(`group ${tag >>> 3} has no end`, at);
          const tagAt = this.pos;
          const inner = this.tag(limit);
          if ((inner & 7) === END_GROUP) {
            if (inner >>> 3 !== tag >>> 3)
              throw this.fail(`group ${tag >>> 3} ended by ${inner >>> 3}`, tagAt);
            return;
          }
          this.skip(inner, limit, depth + 1);
        }
      }
      default:
        throw this.fail(`end of group ${tag >>> 3} without a start`, at);
    }
  }
}

/** Timestamp.seconds and .nanos of the entry being read (module scope: decoding is synchronous). */
let seconds = 0;
let wideSeconds: bigint | undefined;
let nanos = 0;

/** google.protobuf.Timestamp, merged into seconds/nanos as protobuf merges a repeated message field. */
function readTimestamp(r: WireReader, limit: number): void {
  while (r.pos < limit) {
    const at = r.pos;
    const tag = r.tag(limit);
    switch (tag >>> 3) {
      case 1: {
        r.expect(tag, VARINT, "Timestamp.seconds", at);
        r.varint64(limit, "Timestamp.seconds");
        // int64: two's complement; exact as a double while within ±2^53.
        const high = hi | 0;
        if (high >= -0x200000 && high < 0x200000) {
          seconds = high * 0x100000000 + lo;
          wideSeconds = undefined;
        } else {
          seconds = 0;
          wideSeconds = BigInt.asIntN(64, (BigInt(hi) << 32n) | BigInt(lo));
        }
        break;
      }
      case 2:
        r.expect(tag, VARINT, "Timestamp.nanos", at);
        r.varint64(limit, "Timestamp.nanos");
        nanos = lo | 0; // int32: the low 32 bits, signed
        break;
      default:
        r.skip(tag, limit);
    }
  }
}

/** Checks one LabelPairAdapter; returns the bytes of its name and value fields (all of them). */
function scanPair(r: WireReader, limit: number): number {
  let bytes = 0;
  while (r.pos < limit) {
    const at = r.pos;
    const tag = r.tag(limit);
    const field = tag >>> 3;
    if (field === 1 || field === 2) {
      const what = field === 1 ? "LabelPairAdapter.name" : "LabelPairAdapter.value";
      r.expect(tag, LEN, what, at);
      const end = r.delimited(limit, what);
      r.checkUtf8(r.pos, end, what);
      bytes += end - r.pos;
      r.pos = end;
    } else {
      r.skip(tag, limit);
    }
  }
  return bytes;
}

/** One LabelPairAdapter into `map`, as protobufjs + Object.fromEntries would: the last name wins. */
function readPair(r: WireReader, limit: number, map: Record<string, string>): void {
  let name = "";
  let value = "";
  while (r.pos < limit) {
    const tag = r.tag(limit);
    switch (tag >>> 3) {
      case 1:
        name = r.shortString(limit, "LabelPairAdapter.name");
        break;
      case 2:
        value = r.shortString(limit, "LabelPairAdapter.value");
        break;
      default:
        r.skip(tag, limit);
    }
  }
  // A plain assignment to "__proto__" would set the prototype, not a key.
  if (name === "__proto__")
    Object.defineProperty(map, name, { value, enumerable: true, writable: true, configurable: true });
  else map[name] = value;
}

/** The structuredMetadata of an EntryAdapter already checked by readEntry. */
function readMetadata(buf: Buffer, start: number, end: number): Record<string, string> {
  const r = new WireReader(buf);
  r.pos = start;
  const map: Record<string, string> = {};
  while (r.pos < end) {
    const tag = r.tag(end);
    if (tag >>> 3 === 3) readPair(r, r.delimited(end, "EntryAdapter.structuredMetadata"), map);
    else r.skip(tag, end);
  }
  return map;
}

function readEntry(r: WireReader, limit: number): WireEntry {
  const start = r.pos;
  seconds = 0;
  wideSeconds = undefined;
  nanos = 0;
  let lineStart = 0;
  let lineEnd = 0;
  let pairs = 0;
  let pairBytes = 0;
  while (r.pos < limit) {
    const at = r.pos;
    const tag = r.tag(limit);
    switch (tag >>> 3) {
      case 1:
        r.expect(tag, LEN, "EntryAdapter.timestamp", at);
        readTimestamp(r, r.delimited(limit, "EntryAdapter.timestamp"));
        break;
      case 2:
        r.expect(tag, LEN, "EntryAdapter.line", at);
        lineEnd = r.delimited(limit, "EntryAdapter.line");
        lineStart = r.pos;
        r.checkUtf8(lineStart, lineEnd, "EntryAdapter.line");
        r.pos = lineEnd;
        break;
      case 3:
        r.expect(tag, LEN, "EntryAdapter.structuredMetadata", at);
        pairs++;
        pairBytes += scanPair(r, r.delimited(limit, "EntryAdapter.structuredMetadata"));
        break;
      default:
        r.skip(tag, limit);
    }
  }
  return new WireEntry(r.buf, start, limit, lineStart, lineEnd, pairs, pairBytes);
}

function readStream(r: WireReader, limit: number): DecodedStream {
  let labels = "";
  const entries: DecodedEntry[] = [];
  while (r.pos < limit) {
    const at = r.pos;
    const tag = r.tag(limit);
    switch (tag >>> 3) {
      case 1:
        r.expect(tag, LEN, "StreamAdapter.labels", at);
        labels = r.string(limit, "StreamAdapter.labels");
        break;
      case 2:
        r.expect(tag, LEN, "StreamAdapter.entries", at);
        entries.push(readEntry(r, r.delimited(limit, "StreamAdapter.entries")));
        break;
      case 3:
        r.expect(tag, VARINT, "StreamAdapter.hash", at);
        r.varint64(limit, "StreamAdapter.hash");
        break;
      default:
        r.skip(tag, limit);
    }
  }
  return { labels, entries };
}

/** An uncompressed logproto.PushRequest → its streams; BodyDecodeError (400) when malformed. */
export function decodePushRequest(body: Buffer): DecodedStream[] {
  const r = new WireReader(body);
  const limit = body.length;
  const streams: DecodedStream[] = [];
  while (r.pos < limit) {
    const at = r.pos;
    const tag = r.tag(limit);
    if (tag >>> 3 === 1) {
      r.expect(tag, LEN, "PushRequest.streams", at);
      streams.push(readStream(r, r.delimited(limit, "PushRequest.streams")));
    } else {
      r.skip(tag, limit);
    }
  }
  return streams;
}

// Protobuf wire primitives for the hand-written encoders (Loki's PushRequest, OTLP's
// ExportLogsServiceRequest): sizes first, then bytes written straight into one pre-sized Buffer.
import type { Labels } from "../../model.ts";

// Node's direct string writers skip `write()`'s encoding dispatch (measured ~1.5x on short strings).
interface FastWriters {
  utf8Write(s: string, offset: number, length: number): number;
  latin1Write(s: string, offset: number, length: number): number;
}
const fast = Buffer.prototype as unknown as Partial<FastWriters>;
const HAS_FAST_WRITERS = typeof fast.utf8Write === "function" && typeof fast.latin1Write === "function";

export function varintLen(v: number): number {
  if (v < 0x80) return 1;
  if (v < 0x4000) return 2;
  if (v < 0x200000) return 3;
  if (v < 0x10000000) return 4;
  let n = 4;
  let rest = Math.floor(v / 0x10000000);
  while (rest > 0) {
    n++;
    rest = Math.floor(rest / 0x80);
  }
  return n;
}

export function writeVarint(buf: Buffer, pos: number, v: number): number {
  while (v > 0x7fffffff) {
    buf[pos++] = (v % 0x80) | 0x80;
    v = Math.floor(v / 0x80);
  }
  while (v > 0x7f) {
    buf[pos++] = (v & 0x7f) | 0x80;
    v >>>= 7;
  }
  buf[pos++] = v;
  return pos;
}

/** UTF-8 length; short ASCII strings (metadata names and values) are measured without a native call. */
export function utf8Len(s: string): number {
  const n = s.length;
  if (n > 64) return Buffer.byteLength(s, "utf8");
  for (let i = 0; i < n; i++) if (s.charCodeAt(i) > 0x7f) return Buffer.byteLength(s, "utf8");
  return n;
}

/** Writes `bytes` UTF-8 bytes of `s`; byte length equal to UTF-16 length means pure ASCII. */
export function writeStr(buf: Buffer, pos: number, s: string, bytes: number): number {
  if (bytes === s.length && bytes <= 32) {
    for (let i = 0; i < bytes; i++) buf[pos + i] = s.charCodeAt(i);
    return pos + bytes;
  }
  if (!HAS_FAST_WRITERS) return pos + buf.write(s, pos, bytes, "utf8");
  const w = buf as unknown as FastWriters;
  return pos + (bytes === s.length ? w.latin1Write(s, pos, bytes) : w.utf8Write(s, pos, bytes));
}

/** A proto3 string field: omitted when empty, as Go's encoder does. */
export function writeField(buf: Buffer, pos: number, tag: number, s: string, bytes: number): number {
  if (bytes === 0) return pos;
  buf[pos++] = tag;
  pos = writeVarint(buf, pos, bytes);
  return writeStr(buf, pos, s, bytes);
}

/** Size of a length-delimited field holding `bytes` bytes (tag + length + payload). */
export function fieldLen(bytes: number): number {
  return 1 + varintLen(bytes) + bytes;
}

/** `slots` itself when it holds `size` numbers, else a copy grown by doubling (growth stays rare). */
export function withRoom(slots: Float64Array, size: number): Float64Array {
  if (size <= slots.length) return slots;
  const grown = new Float64Array(Math.max(size, slots.length * 2));
  grown.set(slots);
  return grown;
}

/** Metadata names ascending; the common already-sorted case allocates nothing beyond Object.keys. */
export function sortedKeys(map: Labels): string[] {
  const keys = Object.keys(map);
  for (let i = 1; i < keys.length; i++) {
    if (keys[i - 1]! > keys[i]!) return keys.sort();
  }
  return keys;
}

/**
 * The metadata names of a run of entries: a source builds every entry's metadata with the same names
 * in the same order, so they are listed, sorted and measured once per run, not once per entry.
 */
export interface MetaShape {
  /** Names in the map's own order (what for-in yields), to recognise the next map of this shape. */
  readonly own: readonly string[];
  /** Names ascending: the write order. */
  readonly sorted: string[];
  /** UTF-8 bytes of each sorted name. */
  readonly nameBytes: readonly number[];
}

export const NO_SHAPE: MetaShape = { own: [], sorted: [], nameBytes: [] };

/** True when `map` has exactly the names of `shape`, in the same order; allocates nothing. */
export function hasShape(map: Labels, shape: MetaShape): boolean {
  const own = shape.own;
  let i = 0;
  for (const k in map) {
    if (own[i] !== k) return false;
    i++;
  }
  return i === own.length;
}

export function shapeOf(map: Labels): MetaShape {
  const sorted = sortedKeys(map);
  return { own: Object.keys(map), sorted, nameBytes: sorted.map(utf8Len) };
}

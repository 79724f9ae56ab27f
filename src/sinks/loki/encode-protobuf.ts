// logproto.PushRequest written straight into one pre-sized Buffer: the hot path, so no message
// objects and no intermediate writers. Two passes over the batch: sizes first, then bytes.
// Field numbers match proto/loki_push.proto; proto3 zero scalars are omitted, as Loki's Go encoder does.
// bench/codec.ts measures this file against protobufjs on the same batches.
import type { StreamGroup } from "../receiving-loki/streams.ts";
import {
  NO_SHAPE,
  hasShape,
  withRoom,
  shapeOf,
  utf8Len,
  varintLen,
  writeField,
  writeVarint,
} from "../wire/protobuf.ts";

const NS_PER_S = 1_000_000_000n;

// Tags: (field << 3) | wire type. Wire type 2 = length-delimited, 0 = varint.
const TAG_STREAMS = 0x0a; // PushRequest.streams = 1
const TAG_LABELS = 0x0a; // StreamAdapter.labels = 1
const TAG_ENTRIES = 0x12; // StreamAdapter.entries = 2
const TAG_TIMESTAMP = 0x0a; // EntryAdapter.timestamp = 1
const TAG_LINE = 0x12; // EntryAdapter.line = 2
const TAG_METADATA = 0x1a; // EntryAdapter.structuredMetadata = 3
const TAG_SECONDS = 0x08; // Timestamp.seconds = 1 (int64)
const TAG_NANOS = 0x10; // Timestamp.nanos = 2 (int32)
const TAG_NAME = 0x0a; // LabelPairAdapter.name = 1
const TAG_VALUE = 0x12; // LabelPairAdapter.value = 2

/** int64 as a varint: negative seconds (pre-1970) take the 10-byte two's-complement form. */
function int64Len(v: number): number {
  return v >= 0 ? varintLen(v) : 10;
}

function writeInt64(buf: Buffer, pos: number, v: number): number {
  if (v >= 0) return writeVarint(buf, pos, v);
  let u = BigInt.asUintN(64, BigInt(v));
  while (u > 0x7fn) {
    buf[pos++] = Number(u & 0x7fn) | 0x80;
    u >>= 7n;
  }
  buf[pos++] = Number(u);
  return pos;
}

/**
 * Scratch from the sizing pass, read back by the writing pass. One per process, grown to the largest
 * batch seen and reused: encoding is synchronous, so no two batches share it, and a batch costs the
 * garbage collector nothing here (a fresh plan per batch was ~220 bytes of garbage per entry).
 */
interface Plan {
  total: number;
  streamSizes: Float64Array;
  labelBytes: Float64Array;
  entrySizes: Float64Array;
  tsSizes: Uint8Array;
  seconds: Float64Array;
  nanos: Int32Array;
  metaKeys: string[][];
  /** name bytes, value bytes, pair size: three slots per metadata pair, in write order. */
  metaLens: Float64Array;
}

const scratch: Plan = {
  total: 0,
  streamSizes: new Float64Array(16),
  labelBytes: new Float64Array(16),
  entrySizes: new Float64Array(1024),
  tsSizes: new Uint8Array(1024),
  seconds: new Float64Array(1024),
  nanos: new Int32Array(1024),
  metaKeys: new Array<string[]>(1024),
  metaLens: new Float64Array(1024 * 9),
};

/** Room for `streams` streams and `entries` entries; grown capacities double, so growth is rare. */
function planFor(streams: number, entries: number): Plan {
  const p = scratch;
  p.total = 0;
  if (p.streamSizes.length < streams) {
    const n = Math.max(streams, p.streamSizes.length * 2);
    p.streamSizes = new Float64Array(n);
    p.labelBytes = new Float64Array(n);
  }
  if (p.entrySizes.length < entries) {
    const n = Math.max(entries, p.entrySizes.length * 2);
    p.entrySizes = new Float64Array(n);
    p.tsSizes = new Uint8Array(n);
    p.seconds = new Float64Array(n);
    p.nanos = new Int32Array(n);
    p.metaKeys = new Array<string[]>(n);
  }
  return p;
}

/** metaLens with room for slot `m + 2`, its contents kept. */
function metaLensFor(p: Plan, m: number): Float64Array {
  return (p.metaLens = withRoom(p.metaLens, m + 3));
}

/** Splits integer nanoseconds into Timestamp seconds + nanos (0 ≤ nanos < 1e9), exactly. */
function splitNs(ts: bigint, out: { s: number; n: number }): void {
  // The nanos exactly, with the one BigInt operation per entry; the seconds from a double: Number(ts)
  // is off by at most half an ulp (≤ 1024 ns anywhere in int64), so (Number(ts) - n) / 1e9 lies within
  // 1e-6 of the exact whole second and rounding recovers it.
  let n = Number(ts % NS_PER_S);
  if (n < 0) n += 1e9; // BigInt % truncates toward zero; Timestamp nanos are never negative
  out.s = Math.round((Number(ts) - n) / 1e9);
  out.n = n;
}

function plan(streams: readonly StreamGroup[]): Plan {
  let count = 0;
  for (const stream of streams) count += stream.entries.length;
  const p = planFor(streams.length, count);
  let m = 0;
  const ts = { s: 0, n: 0 };
  let shape = NO_SHAPE;
  let e = 0;
  for (let si = 0; si < streams.length; si++) {
    const stream = streams[si]!;
    const lb = Buffer.byteLength(stream.labels, "utf8");
    p.labelBytes[si] = lb;
    let streamSize = lb > 0 ? 1 + varintLen(lb) + lb : 0;
    for (const entry of stream.entries) {
      splitNs(entry.timestampNs, ts);
      const tsSize = (ts.s === 0 ? 0 : 1 + int64Len(ts.s)) + (ts.n === 0 ? 0 : 1 + varintLen(ts.n));
      p.seconds[e] = ts.s;
      p.nanos[e] = ts.n;
      p.tsSizes[e] = tsSize;
      let size = 1 + varintLen(tsSize) + tsSize;
      const lineBytes = entry.lineBytes;
      if (lineBytes > 0) size += 1 + varintLen(lineBytes) + lineBytes;
      const meta = entry.structuredMetadata;
      if (!hasShape(meta, shape)) shape = shapeOf(meta);
      const keys = shape.sorted;
      p.metaKeys[e] = keys; // shared by the run's entries; never written to
      for (let ki = 0; ki < keys.length; ki++) {
        const nb = shape.nameBytes[ki]!;
        const vb = utf8Len(meta[keys[ki]!]!);
        const pair = (nb > 0 ? 1 + varintLen(nb) + nb : 0) + (vb > 0 ? 1 + varintLen(vb) + vb : 0);
        const lens = metaLensFor(p, m);
        lens[m] = nb;
        lens[m + 1] = vb;
        lens[m + 2] = pair;
        m += 3;
        size += 1 + varintLen(pair) + pair;
      }
      p.entrySizes[e] = size;
      streamSize += 1 + varintLen(size) + size;
      e++;
    }
    p.streamSizes[si] = streamSize;
    p.total += 1 + varintLen(streamSize) + streamSize;
  }
  return p;
}

const freshBuffer = (bytes: number): Buffer => Buffer.allocUnsafe(bytes);

/**
 * Serialises the streams as a logproto.PushRequest (uncompressed), into a buffer of exactly the
 * planned size from `alloc` (default: a fresh one). request.ts passes a reused scratch buffer when
 * it compresses the bytes at once.
 */
export function encodePushRequest(
  streams: readonly StreamGroup[],
  alloc: (bytes: number) => Buffer = freshBuffer,
): Buffer {
  const p = plan(streams);
  const buf = alloc(p.total);
  let pos = 0;
  let e = 0; // entry index across streams
  let m = 0; // metadata-length slot index
  for (let si = 0; si < streams.length; si++) {
    const stream = streams[si]!;
    buf[pos++] = TAG_STREAMS;
    pos = writeVarint(buf, pos, p.streamSizes[si]!);
    pos = writeField(buf, pos, TAG_LABELS, stream.labels, p.labelBytes[si]!);
    for (const entry of stream.entries) {
      buf[pos++] = TAG_ENTRIES;
      pos = writeVarint(buf, pos, p.entrySizes[e]!);
      buf[pos++] = TAG_TIMESTAMP;
      pos = writeVarint(buf, pos, p.tsSizes[e]!);
      const s = p.seconds[e]!;
      if (s !== 0) {
        buf[pos++] = TAG_SECONDS;
        pos = writeInt64(buf, pos, s);
      }
      const ns = p.nanos[e]!;
      if (ns !== 0) {
        buf[pos++] = TAG_NANOS;
        pos = writeVarint(buf, pos, ns);
      }
      pos = writeField(buf, pos, TAG_LINE, entry.line, entry.lineBytes);
      const meta = entry.structuredMetadata;
      for (const k of p.metaKeys[e]!) {
        buf[pos++] = TAG_METADATA;
        pos = writeVarint(buf, pos, p.metaLens[m + 2]!);
        pos = writeField(buf, pos, TAG_NAME, k, p.metaLens[m]!);
        pos = writeField(buf, pos, TAG_VALUE, meta[k]!, p.metaLens[m + 1]!);
        m += 3;
      }
      e++;
    }
  }
  // A mismatch means a size was mis-planned: fail loudly rather than ship a corrupt request.
  if (pos !== p.total) throw new Error(`protobuf encoder wrote ${pos} of ${p.total} planned bytes`);
  return buf;
}

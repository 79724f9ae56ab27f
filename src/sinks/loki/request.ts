// Batch → request body and content headers, in the configured wire format. Output is byte-identical
// whichever path a batch takes. Snappy compresses on the event loop, always: a 1 MiB batch encodes and
// compresses in ~3 ms, 4 MiB in ~13 ms, and the libuv-pool path it used to take above 1 MiB of lines
// cost 2-3x the CPU (a fresh buffer per batch for the encode, the pool hop; 4 000-entry batches of
// bench/codec.ts's corpus: 0.7 µs an entry on the loop, 1.6-2.3 µs off it). gzip is ~10x slower,
// so a large JSON batch still compresses in the pool, off the loop (spec B §4.3, upstream #55).
import { gzip as gzipAsync, gzipSync } from "node:zlib";
import { promisify } from "node:util";
import snappy from "snappy";
import type { Batch } from "../../model.ts";
import type { WireFormat } from "./settings.ts";
import { groupStreams } from "./streams.ts";
import { encodePushRequest } from "./encode-protobuf.ts";
import { encodeJsonPush } from "./encode-json.ts";
import type { EncodedRequest } from "../wire/push-service.ts";

const gzip = promisify(gzipAsync);

// snappy's default hands back an external buffer with a finalizer per call; copying the output
// into a plain Buffer is ~10x faster for 350 KB bodies (0.11 vs 1.14 ms measured) and byte-identical.
const SNAPPY_OPTS = { copyOutputData: true };

/**
 * Line bytes at or above which gzip leaves the event loop (spec B §4.3, upstream #55; the Python
 * threshold was 64 KiB). Below it the thread-pool round trip and its buffers cost more than they save.
 */
export const OFFLOAD_LINE_BYTES = 1_048_576;

export type { EncodedRequest };

const HEADERS: Record<WireFormat, Readonly<Record<string, string>>> = {
  "protobuf-snappy": { "content-type": "application/x-protobuf", "content-encoding": "snappy" },
  json: { "content-type": "application/json" },
  "json-gzip": { "content-type": "application/json", "content-encoding": "gzip" },
};

function lineBytesOf(batch: Batch): number {
  let total = 0;
  for (const entry of batch) total += entry.lineBytes;
  return total;
}

/**
 * Largest protobuf encode that goes through the reused scratch buffer: room for the largest
 * `batch.max_bytes` an operator is likely to set (a few MiB) plus one line of up to `max_line_bytes`.
 * A bigger one gets a buffer of its own. The scratch grows by doubling and is kept, once per process:
 * at most twice the largest batch seen, and never above this (docs/capacity.md).
 */
const SCRATCH_MAX_BYTES = 16 * 1_048_576;
let scratch = Buffer.allocUnsafe(0);

/**
 * A view of the scratch buffer, grown to fit `bytes`. The uncompressed protobuf of a synchronous
 * encode lives only until snappy has copied it out, so one buffer serves every batch: a fresh
 * 0.3–1 MB buffer per batch is external memory whose churn makes V8 run full mark-compacts far more
 * often (encode + snappy 0.9 → 0.4 µs per entry with bench/run.ts's 200 000-entry corpus in the heap).
 */
function scratchView(bytes: number): Buffer {
  if (bytes > SCRATCH_MAX_BYTES) return Buffer.allocUnsafe(bytes);
  if (scratch.length < bytes)
    scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX_BYTES, Math.max(bytes, 2 * scratch.length)));
  return scratch.subarray(0, bytes);
}

/** The uncompressed body; `reuse` only when it is compressed before anything else runs. */
function serialise(batch: Batch, format: WireFormat, reuse = false): Buffer {
  const streams = groupStreams(batch);
  if (format !== "protobuf-snappy") return encodeJsonPush(streams);
  return reuse ? encodePushRequest(streams, scratchView) : encodePushRequest(streams);
}

/** Encodes and compresses on the event loop: every snappy batch, and small gzip ones. */
export function encodeRequestSync(batch: Batch, format: WireFormat): EncodedRequest {
  // snappy.compressSync copies the bytes out before returning, so the scratch buffer can take them.
  const raw = serialise(batch, format, true);
  const body =
    format === "protobuf-snappy"
      ? snappy.compressSync(raw, SNAPPY_OPTS)
      : format === "json-gzip"
        ? gzipSync(raw)
        : raw;
  return { body, headers: HEADERS[format] };
}

/** Same bytes as encodeRequestSync; gzip batches of ≥ `offloadAt` line bytes compress in the pool. */
export async function encodeRequest(
  batch: Batch,
  format: WireFormat,
  offloadAt = OFFLOAD_LINE_BYTES,
): Promise<EncodedRequest> {
  if (format !== "json-gzip" || lineBytesOf(batch) < offloadAt) return encodeRequestSync(batch, format);
  return { body: await gzip(serialise(batch, format)), headers: HEADERS[format] };
}

// Batch → request body and content headers, in the configured wire format. Compression of large
// batches runs in libuv's thread pool (native snappy / zlib async), the encode itself stays on the
// loop: measured ~7 ms for 10 000 × 280 B protobuf, while the sync total with compression is
// 15–30 ms (figures in the sink's report and bench/codec.ts). Output is byte-identical either way.
import { gzip as gzipAsync, gzipSync } from "node:zlib";
import { promisify } from "node:util";
import snappy from "snappy";
import type { Batch } from "../../model.ts";
import type { WireFormat } from "./settings.ts";
import { groupStreams } from "./streams.ts";
import { encodePushRequest } from "./encode-protobuf.ts";
import { encodeJsonPush } from "./encode-json.ts";

const gzip = promisify(gzipAsync);

// snappy's default hands back an external buffer with a finalizer per call; copying the output
// into a plain Buffer is ~10x faster for 350 KB bodies (0.11 vs 1.14 ms measured) and byte-identical.
const SNAPPY_OPTS = { copyOutputData: true };

/**
 * Line bytes at or above which compression leaves the event loop (spec B §4.3, upstream #55). The
 * Python threshold was 64 KiB; here a 1 MiB protobuf batch snappy-compresses synchronously in under
 * 1 ms while the thread-pool round trip costs ~0.5 ms plus retained buffers (peak RSS 364 → 290 MiB
 * on the 200k-entry bench), so only batches above the default `batch.max_bytes` go off-thread.
 */
export const OFFLOAD_LINE_BYTES = 1_048_576;

export interface EncodedRequest {
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

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
 * Largest protobuf encode that goes through the reused scratch buffer. Batches below
 * OFFLOAD_LINE_BYTES of lines encode to well under this; a bigger one gets a buffer of its own.
 */
const SCRATCH_MAX_BYTES = 4 * 1_048_576;
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

/** Encodes and compresses synchronously: small batches, and the reference for byte identity. */
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

/** Same bytes as encodeRequestSync; batches of ≥ 64 KiB of lines compress off the event loop. */
export async function encodeRequest(
  batch: Batch,
  format: WireFormat,
  offloadAt = OFFLOAD_LINE_BYTES,
): Promise<EncodedRequest> {
  if (lineBytesOf(batch) < offloadAt) return encodeRequestSync(batch, format);
  const raw = serialise(batch, format);
  const body =
    format === "protobuf-snappy"
      ? await snappy.compress(raw, SNAPPY_OPTS)
      : format === "json-gzip"
        ? await gzip(raw)
        : raw;
  return { body, headers: HEADERS[format] };
}

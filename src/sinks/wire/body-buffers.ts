// Buffers for building a request body on the hot path, shared by the Loki and OTLP encoders.
import type { Batch } from "../../model.ts";

/**
 * Line bytes at or above which gzip leaves the event loop (spec B §4.3, upstream #55; the Python
 * threshold was 64 KiB). Below it the thread-pool round trip and its buffers cost more than they save.
 */
export const OFFLOAD_LINE_BYTES = 1_048_576;

/** The batch's line bytes: what decides whether gzip leaves the event loop. */
export function lineBytesOf(batch: Batch): number {
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
 * encode lives only until snappy or gzipSync has copied it out, so one buffer serves every batch: a fresh
 * 0.3–1 MB buffer per batch is external memory whose churn makes V8 run full mark-compacts far more
 * often (encode + snappy 0.9 → 0.4 µs per entry with bench/run.ts's 200 000-entry corpus in the heap).
 */
export function scratchView(bytes: number): Buffer {
  if (bytes > SCRATCH_MAX_BYTES) return Buffer.allocUnsafe(bytes);
  if (scratch.length < bytes)
    scratch = Buffer.allocUnsafe(Math.min(SCRATCH_MAX_BYTES, Math.max(bytes, 2 * scratch.length)));
  return scratch.subarray(0, bytes);
}

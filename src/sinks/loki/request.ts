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
import { groupStreams } from "../receiving-loki/streams.ts";
import { encodePushRequest } from "./encode-protobuf.ts";
import { encodeJsonPush } from "./encode-json.ts";
import type { EncodedRequest } from "../wire/push-service.ts";
import { OFFLOAD_LINE_BYTES, lineBytesOf, scratchView } from "../wire/body-buffers.ts";

export { OFFLOAD_LINE_BYTES };

const gzip = promisify(gzipAsync);

// snappy's default hands back an external buffer with a finalizer per call; copying the output
// into a plain Buffer is ~10x faster for 350 KB bodies (0.11 vs 1.14 ms measured) and byte-identical.
const SNAPPY_OPTS = { copyOutputData: true };

export type { EncodedRequest };

const HEADERS: Record<WireFormat, Readonly<Record<string, string>>> = {
  "protobuf-snappy": { "content-type": "application/x-protobuf", "content-encoding": "snappy" },
  json: { "content-type": "application/json" },
  "json-gzip": { "content-type": "application/json", "content-encoding": "gzip" },
};

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

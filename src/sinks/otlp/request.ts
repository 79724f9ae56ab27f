// Batch → OTLP/HTTP request body (protobuf, gzip optional) and its content headers. gzip runs on
// the event loop for small batches and in the pool from OFFLOAD_LINE_BYTES of lines on, as the
// Loki sink's JSON+gzip does; the bytes are the same either way.
import { gzip as gzipAsync, gzipSync } from "node:zlib";
import { promisify } from "node:util";
import type { Batch } from "../../model.ts";
import { OFFLOAD_LINE_BYTES, lineBytesOf, scratchView } from "../wire/body-buffers.ts";
import type { EncodedRequest } from "../wire/push-service.ts";
import { encodeExportLogsRequest, type OtlpRecordSettings } from "./encode.ts";

const gzip = promisify(gzipAsync);

const PLAIN = { "content-type": "application/x-protobuf" } as const;
const GZIPPED = { "content-type": "application/x-protobuf", "content-encoding": "gzip" } as const;

export interface OtlpRequestSettings extends OtlpRecordSettings {
  readonly gzip: boolean;
}

export async function encodeOtlpRequest(
  batch: Batch,
  settings: OtlpRequestSettings,
  observedNs: bigint,
  offloadAt = OFFLOAD_LINE_BYTES,
): Promise<EncodedRequest> {
  if (!settings.gzip) return { body: encodeExportLogsRequest(batch, settings, observedNs), headers: PLAIN };
  if (lineBytesOf(batch) < offloadAt) {
    // gzipSync copies the bytes out before returning, so the scratch buffer can take them.
    return {
      body: gzipSync(encodeExportLogsRequest(batch, settings, observedNs, scratchView)),
      headers: GZIPPED,
    };
  }
  return { body: await gzip(encodeExportLogsRequest(batch, settings, observedNs)), headers: GZIPPED };
}

// The official opentelemetry-proto definitions (test/fixtures/otlp-proto/, vendored unchanged), loaded
// with protobufjs: the independent reader every OTLP test judges sf2loki's hand-written encoder by.
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";

const ROOT_DIR = fileURLToPath(new URL("../fixtures/otlp-proto/", import.meta.url));

const root = new protobuf.Root();
root.resolvePath = (_origin, target) => ROOT_DIR + target;
root.loadSync("opentelemetry/proto/collector/logs/v1/logs_service.proto", { keepCase: true });

const Request = root.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceRequest");
const Response = root.lookupType("opentelemetry.proto.collector.logs.v1.ExportLogsServiceResponse");

/** An AnyValue as protobufjs decodes it: exactly one field set (the oneof). */
export interface AnyValue {
  string_value?: string;
  bool_value?: boolean;
  int_value?: string;
  double_value?: number;
  bytes_value?: Buffer;
}

export interface KeyValue {
  key: string;
  value?: AnyValue;
}

export interface DecodedRecord {
  time_unix_nano: string;
  observed_time_unix_nano: string;
  severity_number: number;
  severity_text: string;
  body?: AnyValue;
  attributes: KeyValue[];
}

export interface DecodedRequest {
  resource_logs: {
    resource?: { attributes: KeyValue[] };
    scope_logs: { scope?: { name: string; version: string }; log_records: DecodedRecord[] }[];
  }[];
}

// google.rpc.Status (googleapis, google/rpc/status.proto), without its Any details: what an OTLP
// receiver's failure body holds.
const Status = protobuf
  .parse('syntax = "proto3"; package google.rpc; message Status { int32 code = 1; string message = 2; }')
  .root.lookupType("google.rpc.Status");

/** A google.rpc.Status body with `message` (code 3, INVALID_ARGUMENT, unless given). */
export function encodeStatus(message: string, code = 3): Buffer {
  return Buffer.from(Status.encode(Status.fromObject({ code, message })).finish());
}

/** Decodes an (uncompressed) ExportLogsServiceRequest body; throws on malformed bytes. */
export function decodeExportRequest(body: Uint8Array): DecodedRequest {
  return Request.toObject(Request.decode(body), {
    longs: String,
    enums: Number,
    defaults: true,
    arrays: true,
    oneofs: false,
  }) as DecodedRequest;
}

/** Encodes an ExportLogsServiceResponse (what a receiver answers with a 200). */
export function encodeExportResponse(partial?: {
  rejected_log_records: number;
  error_message: string;
}): Buffer {
  return Buffer.from(
    Response.encode(Response.fromObject(partial ? { partial_success: partial } : {})).finish(),
  );
}

/** A string-valued attribute list as a plain map (a non-string value fails the test that reads it). */
export function stringAttributes(kvs: readonly KeyValue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const kv of kvs) {
    const v = kv.value?.string_value;
    if (v === undefined)
      throw new Error(`attribute ${kv.key} is not a string AnyValue: ${JSON.stringify(kv.value)}`);
    out[kv.key] = v;
  }
  return out;
}

/** One flat row per record, with its resource's and its own attributes as maps. */
export interface FlatRecord {
  resource: Record<string, string>;
  scope: string;
  timeNs: bigint;
  observedNs: bigint;
  severityNumber: number;
  severityText: string;
  body: string;
  attributes: Record<string, string>;
}

export function flatRecords(req: DecodedRequest): FlatRecord[] {
  const out: FlatRecord[] = [];
  for (const rl of req.resource_logs) {
    const resource = stringAttributes(rl.resource?.attributes ?? []);
    for (const sl of rl.scope_logs) {
      for (const r of sl.log_records) {
        const body = r.body?.string_value;
        if (body === undefined)
          throw new Error(`record body is not a string AnyValue: ${JSON.stringify(r.body)}`);
        out.push({
          resource,
          scope: sl.scope?.name ?? "",
          timeNs: BigInt(r.time_unix_nano),
          observedNs: BigInt(r.observed_time_unix_nano),
          severityNumber: r.severity_number,
          severityText: r.severity_text,
          body,
          attributes: stringAttributes(r.attributes),
        });
      }
    }
  }
  return out;
}

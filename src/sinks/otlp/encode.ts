// OTLP's ExportLogsServiceRequest written straight into one pre-sized Buffer, in the manner of the
// Loki encoder (src/sinks/loki/encode-protobuf.ts): no message objects, two passes over the batch,
// sizes then bytes. Field numbers match opentelemetry-proto (collector/logs/v1, logs/v1, common/v1,
// resource/v1); test/sinks/otlp/encode.test.ts decodes the bytes with those official definitions,
// and bench/otlp-codec.ts measures this file against the Loki encoder on the same batches.
//
// What a stream's labels give every record (its resource, its label attributes, a severity per
// level) is encoded once per batch and copied per record.
import type { Batch, LogEntry, Labels } from "../../model.ts";
import { sameLabelSet } from "../../model.ts";
import {
  NO_SHAPE,
  fieldLen,
  hasShape,
  withRoom,
  shapeOf,
  utf8Len,
  varintLen,
  writeStr,
  writeVarint,
  type MetaShape,
} from "../wire/protobuf.ts";
import { SCOPE_NAME, labelAttributes, resourceAttributes, resourceKey, severityNumber } from "./mapping.ts";

// Tags: (field << 3) | wire type. 2 = length-delimited, 0 = varint, 1 = fixed64.
const TAG_RESOURCE_LOGS = 0x0a; // ExportLogsServiceRequest.resource_logs = 1
const TAG_RESOURCE = 0x0a; // ResourceLogs.resource = 1
const TAG_SCOPE_LOGS = 0x12; // ResourceLogs.scope_logs = 2
const TAG_RESOURCE_ATTRIBUTE = 0x0a; // Resource.attributes = 1
const TAG_SCOPE = 0x0a; // ScopeLogs.scope = 1
const TAG_LOG_RECORD = 0x12; // ScopeLogs.log_records = 2
const TAG_SCOPE_NAME = 0x0a; // InstrumentationScope.name = 1
const TAG_TIME = 0x09; // LogRecord.time_unix_nano = 1 (fixed64)
const TAG_SEVERITY_NUMBER = 0x10; // LogRecord.severity_number = 2
const TAG_SEVERITY_TEXT = 0x1a; // LogRecord.severity_text = 3
const TAG_BODY = 0x2a; // LogRecord.body = 5
const TAG_ATTRIBUTE = 0x32; // LogRecord.attributes = 6
const TAG_OBSERVED_TIME = 0x59; // LogRecord.observed_time_unix_nano = 11 (fixed64)
const TAG_KEY = 0x0a; // KeyValue.key = 1
const TAG_VALUE = 0x12; // KeyValue.value = 2
const TAG_STRING_VALUE = 0x0a; // AnyValue.string_value = 1 (a oneof: written even when empty)

export interface OtlpRecordSettings {
  /** The `service.name` resource attribute. */
  readonly serviceName: string;
}

/** A run of one stream's entries: its label attributes, encoded once. */
interface Run {
  readonly labels: Labels;
  readonly attributes: Buffer;
  readonly entries: LogEntry[];
}

/** One org: one ResourceLogs with one ScopeLogs. */
interface ResourceGroup {
  readonly resource: Buffer;
  readonly runs: Run[];
  scopeLogsSize: number;
  resourceLogsSize: number;
}

/** `AnyValue{string_value}` of `bytes` UTF-8 bytes: its size. */
function anyStringLen(bytes: number): number {
  return fieldLen(bytes);
}

/** KeyValue{key, value: AnyValue{string_value}} as complete fields under `tag`, for what repeats. */
function keyValues(tag: number, pairs: readonly (readonly [string, string])[]): Buffer {
  let size = 0;
  const sizes = pairs.map(([k, v]) => {
    const kv = fieldLen(utf8Len(k)) + fieldLen(anyStringLen(utf8Len(v)));
    size += fieldLen(kv);
    return kv;
  });
  const buf = Buffer.allocUnsafe(size);
  let pos = 0;
  pairs.forEach(([k, v], i) => {
    buf[pos++] = tag;
    pos = writeVarint(buf, pos, sizes[i]!);
    pos = writeKeyValue(buf, pos, k, utf8Len(k), v, utf8Len(v));
  });
  return buf;
}

function writeString(buf: Buffer, pos: number, tag: number, s: string, bytes: number): number {
  buf[pos++] = tag;
  pos = writeVarint(buf, pos, bytes);
  return writeStr(buf, pos, s, bytes);
}

function writeKeyValue(buf: Buffer, pos: number, k: string, kb: number, v: string, vb: number): number {
  pos = writeString(buf, pos, TAG_KEY, k, kb);
  buf[pos++] = TAG_VALUE;
  pos = writeVarint(buf, pos, anyStringLen(vb));
  return writeString(buf, pos, TAG_STRING_VALUE, v, vb);
}

/** ScopeLogs.scope, the same for every batch. */
const SCOPE = ((): Buffer => {
  const name = Buffer.from(SCOPE_NAME, "utf8");
  const scope = Buffer.concat([Buffer.from([TAG_SCOPE_NAME, name.length]), name]);
  return Buffer.concat([Buffer.from([TAG_SCOPE, scope.length]), scope]);
})();

/** severity_number + severity_text of each `level` value, encoded once per process. */
const severities = new Map<string, Buffer>();
function severityOf(level: string | undefined): Buffer | undefined {
  if (level === undefined) return undefined;
  let out = severities.get(level);
  if (out) return out;
  const n = severityNumber(level);
  const text = Buffer.from(level, "utf8");
  const parts: Buffer[] = [];
  if (n > 0) parts.push(Buffer.from([TAG_SEVERITY_NUMBER, n]));
  if (text.length > 0) {
    const len = Buffer.allocUnsafe(varintLen(text.length));
    writeVarint(len, 0, text.length);
    parts.push(Buffer.from([TAG_SEVERITY_TEXT]), len, text);
  }
  out = Buffer.concat(parts);
  // Levels are a handful of words; a source with free-form levels must not grow this without bound.
  if (severities.size < 64) severities.set(level, out);
  return out;
}

/** The batch's entries by org (resource), and within one by stream (runs of one label set). */
function groupResources(batch: Batch, settings: OtlpRecordSettings): ResourceGroup[] {
  const byKey = new Map<string, ResourceGroup>();
  const out: ResourceGroup[] = [];
  let lastLabels: Labels | undefined;
  let lastRun: Run | undefined;
  for (const entry of batch) {
    const labels = entry.labels;
    if (lastRun && (labels === lastLabels || sameLabelSet(labels, lastLabels!))) {
      lastRun.entries.push(entry);
      continue;
    }
    const key = resourceKey(labels);
    let group = byKey.get(key);
    if (!group) {
      const resource = keyValues(TAG_RESOURCE_ATTRIBUTE, resourceAttributes(labels, settings.serviceName));
      group = { resource, runs: [], scopeLogsSize: 0, resourceLogsSize: 0 };
      byKey.set(key, group);
      out.push(group);
    }
    let run = group.runs.find((r) => sameLabelSet(r.labels, labels));
    if (!run) {
      run = { labels, attributes: keyValues(TAG_ATTRIBUTE, labelAttributes(labels)), entries: [] };
      group.runs.push(run);
    }
    run.entries.push(entry);
    lastLabels = labels;
    lastRun = run;
  }
  return out;
}

/**
 * Scratch from the sizing pass, read back by the writing pass: one per process, grown to the largest
 * batch seen (encoding is synchronous, so no two batches share it).
 */
interface Plan {
  recordSizes: Float64Array;
  metaKeys: string[][];
  severities: (Buffer | undefined)[];
  /** name bytes, value bytes, KeyValue size: three slots per metadata pair, in write order. */
  metaLens: Float64Array;
}

const scratch: Plan = {
  recordSizes: new Float64Array(1024),
  metaKeys: new Array<string[]>(1024),
  severities: new Array<Buffer | undefined>(1024),
  metaLens: new Float64Array(1024 * 9),
};

function planFor(entries: number): Plan {
  const p = scratch;
  if (p.recordSizes.length < entries) {
    const n = Math.max(entries, p.recordSizes.length * 2);
    p.recordSizes = new Float64Array(n);
    p.metaKeys = new Array<string[]>(n);
    p.severities = new Array<Buffer | undefined>(n);
  }
  return p;
}

/** metaLens with room for slot `m + 2`, its contents kept. */
function metaLensFor(p: Plan, m: number): Float64Array {
  return (p.metaLens = withRoom(p.metaLens, m + 3));
}

// One int64 slot read as its 8 little-endian bytes: a timestamp's fixed64 without BigInt arithmetic.
const wide = new BigUint64Array(1);
const wideBytes = new Uint8Array(wide.buffer);

function writeFixed64(buf: Buffer, pos: number, ns: bigint): number {
  wide[0] = ns;
  for (let i = 0; i < 8; i++) buf[pos + i] = wideBytes[i]!;
  return pos + 8;
}

/**
 * Copies `src` into `buf` at `pos`. The per-record copies are tens of bytes (a severity, a stream's
 * attributes): a loop beats Buffer#copy's native call there (measured in bench/otlp-codec.ts).
 */
function put(buf: Buffer, pos: number, src: Uint8Array): number {
  const n = src.length;
  if (n > 128) return pos + (src as Buffer).copy(buf, pos);
  for (let i = 0; i < n; i++) buf[pos + i] = src[i]!;
  return pos + n;
}

/** Fixed part of every record: time, observed time (tag + 8 bytes each). */
const TIMES_SIZE = 18;

/** Sizes every record, scope and resource of `groups`; returns the request's total size. */
function plan(groups: ResourceGroup[], count: number): number {
  const p = planFor(count);
  let e = 0;
  let m = 0;
  let shape: MetaShape = NO_SHAPE;
  let lastLevel: string | undefined;
  let lastSeverity: Buffer | undefined;
  let total = 0;
  for (const group of groups) {
    let scopeLogs = SCOPE.length;
    for (const run of group.runs) {
      const fixed = TIMES_SIZE + run.attributes.length;
      for (const entry of run.entries) {
        const meta = entry.structuredMetadata;
        if (!hasShape(meta, shape)) shape = shapeOf(meta);
        const keys = shape.sorted;
        p.metaKeys[e] = keys;
        const level = meta.level;
        // A run shares its level: the last one's bytes are reused without a map lookup.
        if (level !== lastLevel) {
          lastLevel = level;
          lastSeverity = severityOf(level);
        }
        const severity = lastSeverity;
        p.severities[e] = severity;
        let size = fixed + fieldLen(anyStringLen(entry.lineBytes)) + (severity ? severity.length : 0);
        for (let ki = 0; ki < keys.length; ki++) {
          const kb = shape.nameBytes[ki]!;
          const vb = utf8Len(meta[keys[ki]!]!);
          const kv = fieldLen(kb) + fieldLen(anyStringLen(vb));
          const lens = metaLensFor(p, m);
          lens[m] = kb;
          lens[m + 1] = vb;
          lens[m + 2] = kv;
          m += 3;
          size += fieldLen(kv);
        }
        p.recordSizes[e] = size;
        scopeLogs += fieldLen(size);
        e++;
      }
    }
    group.scopeLogsSize = scopeLogs;
    group.resourceLogsSize = fieldLen(group.resource.length) + fieldLen(scopeLogs);
    total += fieldLen(group.resourceLogsSize);
  }
  return total;
}

const freshBuffer = (bytes: number): Buffer => Buffer.allocUnsafe(bytes);

/**
 * Serialises `batch` as an ExportLogsServiceRequest (uncompressed) into a buffer of exactly the
 * planned size from `alloc`. `observedNs` is every record's observed_time_unix_nano: when sf2loki
 * took the batch to send (an entry does not carry its own receive time).
 */
export function encodeExportLogsRequest(
  batch: Batch,
  settings: OtlpRecordSettings,
  observedNs: bigint,
  alloc: (bytes: number) => Buffer = freshBuffer,
): Buffer {
  const groups = groupResources(batch, settings);
  const total = plan(groups, batch.length);
  const p = scratch;
  const buf = alloc(total);
  const observed = Buffer.allocUnsafe(8);
  writeFixed64(observed, 0, observedNs);
  let pos = 0;
  let e = 0;
  let m = 0;
  for (const group of groups) {
    buf[pos++] = TAG_RESOURCE_LOGS;
    pos = writeVarint(buf, pos, group.resourceLogsSize);
    buf[pos++] = TAG_RESOURCE;
    pos = writeVarint(buf, pos, group.resource.length);
    pos += group.resource.copy(buf, pos);
    buf[pos++] = TAG_SCOPE_LOGS;
    pos = writeVarint(buf, pos, group.scopeLogsSize);
    pos += SCOPE.copy(buf, pos);
    for (const run of group.runs) {
      for (const entry of run.entries) {
        buf[pos++] = TAG_LOG_RECORD;
        pos = writeVarint(buf, pos, p.recordSizes[e]!);
        buf[pos++] = TAG_TIME;
        pos = writeFixed64(buf, pos, entry.timestampNs);
        const severity = p.severities[e];
        if (severity) pos = put(buf, pos, severity);
        const lineBytes = entry.lineBytes;
        buf[pos++] = TAG_BODY;
        pos = writeVarint(buf, pos, anyStringLen(lineBytes));
        pos = writeString(buf, pos, TAG_STRING_VALUE, entry.line, lineBytes);
        pos = put(buf, pos, run.attributes);
        const meta = entry.structuredMetadata;
        for (const k of p.metaKeys[e]!) {
          buf[pos++] = TAG_ATTRIBUTE;
          pos = writeVarint(buf, pos, p.metaLens[m + 2]!);
          pos = writeKeyValue(buf, pos, k, p.metaLens[m]!, meta[k]!, p.metaLens[m + 1]!);
          m += 3;
        }
        buf[pos++] = TAG_OBSERVED_TIME;
        pos = put(buf, pos, observed);
        e++;
      }
    }
  }
  // A mismatch means a size was mis-planned: fail loudly rather than ship a corrupt request.
  if (pos !== total) throw new Error(`OTLP encoder wrote ${pos} of ${total} planned bytes`);
  return buf;
}

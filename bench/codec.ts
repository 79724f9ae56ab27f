// Codec benchmark: entries/s through protobuf encode + snappy block compression, ours against a
// protobufjs reference (message objects + generated writer) on the same batches in the same run.
// Run standalone: `node bench/codec.ts [entries] [batchSize]` prints JSON.
import { fileURLToPath } from "node:url";
import protobuf from "protobufjs";
import snappy from "snappy";
import { LogEntry } from "../src/model.ts";
import { groupStreams } from "../src/sinks/receiving-loki/streams.ts";
import { encodePushRequest } from "../src/sinks/loki/encode-protobuf.ts";
import { encodeRequestSync } from "../src/sinks/loki/request.ts";

/**
 * The top of the previous hour: recent enough for Loki's age limit (the sink refuses entries older than
 * `sink.loki.limits.reject_old_samples_max_age` before sending, so a fixed past date would bench nothing),
 * and the same for every run within the hour.
 */
const BASE_MS = (Math.floor(Date.now() / 3_600_000) - 1) * 3_600_000;

/**
 * Entries per item the benches' sources yield into the pipeline: what one Pub/Sub fetch response
 * (≤ 100 events) or one CSV network chunk brings, as the real sources yield them.
 */
export const SOURCE_RUN = 100;

/** Entries shaped like the Python benchmark's corpus: ~280-byte JSON lines, ApiEvent rows. */
/** `corpus` over `streams` Pub/Sub topics, in runs of 100 entries each, as live topics arrive. */
export function spreadOver(corpus: readonly LogEntry[], streams: number): LogEntry[] {
  return corpus.map(
    (e, i) =>
      new LogEntry({
        timestampNs: e.timestampNs,
        labels: { source: "pubsub", event_type: `Topic${Math.floor(i / 100) % streams}EventStream` },
        line: e.line,
        structuredMetadata: e.structuredMetadata,
        checkpoint: e.checkpoint,
      }),
  );
}

export function makeCorpus(n: number): LogEntry[] {
  const out: LogEntry[] = new Array<LogEntry>(n);
  for (let i = 0; i < n; i++) {
    const ms = BASE_MS + i;
    const payload = {
      ApiType: "REST",
      ApiVersion: 61,
      EventDate: new Date(ms).toISOString(),
      EventIdentifier: `0f5e8b1c-${String(i).padStart(8, "0")}-4d2a-9c3e-aa11bb22cc33`,
      Id: `0AT${String(i).padStart(15, "0")}`,
      Operation: "Query",
      QueriedEntities: "Account",
      RowsProcessed: i % 500,
      SourceIp: `10.0.${i % 256}.${(i >> 8) % 256}`,
      UserId: `005${String(i % 1000).padStart(15, "0")}`,
    };
    const line = JSON.stringify(payload);
    out[i] = new LogEntry({
      // Sub-millisecond part so the timestamp path does real work.
      timestampNs: BigInt(ms) * 1_000_000n + BigInt(i % 1000) * 1000n,
      // A fresh object per entry, as the pipeline's static-label merge produces.
      labels: { source: "eventlog_objects", event_type: "ApiEvent" },
      line,
      structuredMetadata: { level: "info", user_id: payload.UserId },
      checkpoint: { key: "eventlog_objects:ApiEvent", value: `{"ids":[],"last_ts":"${payload.EventDate}"}` },
    });
  }
  return out;
}

function batches(entries: LogEntry[], batchSize: number): LogEntry[][] {
  const out: LogEntry[][] = [];
  for (let i = 0; i < entries.length; i += batchSize) out.push(entries.slice(i, i + batchSize));
  return out;
}

// As the sink does (src/sinks/loki/request.ts): a plain output buffer, not an external one.
const SNAPPY_OPTS = { copyOutputData: true };

type Encoder = (batch: LogEntry[]) => Buffer;

/** Entries/s of one pass over the pre-built batches, optionally through snappy too. */
function pass(all: LogEntry[][], count: number, encode: Encoder, compress: boolean): number {
  let bytes = 0;
  const start = performance.now();
  for (const b of all)
    bytes += compress ? snappy.compressSync(encode(b), SNAPPY_OPTS).length : encode(b).length;
  const seconds = (performance.now() - start) / 1000;
  if (bytes === 0) throw new Error("benchmark produced no output");
  return count / seconds;
}

function median(xs: number[]): number {
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[sorted.length >> 1]!;
}

/**
 * Median entries/s over `rounds` passes per contender, rounds interleaved so both see the same
 * machine state (the host is shared; a single pass is noise).
 */
function race(
  entries: LogEntry[],
  batchSize: number,
  contenders: Record<string, Encoder>,
  compress: boolean,
  rounds: number,
): Record<string, number> {
  const all = batches(entries, batchSize);
  const samples: Record<string, number[]> = {};
  for (const [name, encode] of Object.entries(contenders)) {
    pass(all.slice(0, 5), 5 * batchSize, encode, compress); // warm-up so both run optimised code
    samples[name] = [];
  }
  for (let r = 0; r < rounds; r++) {
    for (const [name, encode] of Object.entries(contenders)) {
      samples[name]!.push(pass(all, entries.length, encode, compress));
    }
  }
  return Object.fromEntries(Object.entries(samples).map(([name, xs]) => [name, median(xs)]));
}

const ours: Encoder = (b) => encodePushRequest(groupStreams(b));
/** Exactly what the sink runs for a batch below the offload threshold: group, encode, snappy. */
const sinkRequest: Encoder = (b) => encodeRequestSync(b, "protobuf-snappy").body;

/** Entries per second through encode + snappy on pre-built batches of `batchSize`. */
export function benchCodec(entries: LogEntry[], batchSize = 1000, rounds = 3): { eps: number } {
  return { eps: race(entries, batchSize, { ours }, true, rounds).ours! };
}

export interface CodecWindow {
  ms: number;
  eps: number;
  /** Process CPU µs per entry in the window: what the sink's encode + snappy cost, without waits. */
  cpu_us_per_entry: number;
}

/** One pass of the sink's request building over every pre-built batch. */
export interface CodecPass {
  ms: number;
  entries: number;
  cpuMicros: number;
}

/** A window's figures from its passes, added up. */
export function codecWindowOf(passes: readonly CodecPass[]): CodecWindow {
  let ms = 0;
  let count = 0;
  let cpu = 0;
  for (const p of passes) {
    ms += p.ms;
    count += p.entries;
    cpu += p.cpuMicros;
  }
  return {
    ms: Math.round(ms),
    eps: Math.round(count / (ms / 1000)),
    cpu_us_per_entry: Math.round((cpu / count) * 1000) / 1000,
  };
}

/**
 * The sink's request building (encodeRequestSync: grouping, protobuf encode, snappy) over pre-built
 * batches of `batchSize`: each call runs one pass over them all, timed with the process's CPU. Warmed
 * up on construction. bench/paired.ts interleaves these passes with e2e passes into windows.
 */
export function codecPasses(entries: LogEntry[], batchSize = 1000): () => CodecPass {
  const all = batches(entries, batchSize);
  pass(all.slice(0, 5), 5 * batchSize, sinkRequest, false); // warm-up: optimised code before the first window
  return () => {
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    pass(all, entries.length, sinkRequest, false);
    const ms = performance.now() - t0;
    const cpu = process.cpuUsage(cpu0);
    return { ms, entries: entries.length, cpuMicros: cpu.user + cpu.system };
  };
}

let referenceType: protobuf.Type | undefined;

/** The same request through protobufjs message objects: what a straightforward port would do. */
function referenceEncoder(): Encoder {
  referenceType ??= protobuf
    .loadSync(fileURLToPath(new URL("../proto/loki_push.proto", import.meta.url)))
    .lookupType("logproto.PushRequest");
  const type = referenceType;
  return (batch) => {
    const streams = groupStreams(batch).map((s) => ({
      labels: s.labels,
      entries: s.entries.map((e) => ({
        timestamp: {
          seconds: Number(e.timestampNs / 1_000_000_000n),
          nanos: Number(e.timestampNs % 1_000_000_000n),
        },
        line: e.line,
        structuredMetadata: Object.keys(e.structuredMetadata)
          .sort()
          .map((name) => ({ name, value: e.structuredMetadata[name] })),
      })),
    }));
    return Buffer.from(type.encode({ streams }).finish());
  };
}

/** Ours against protobufjs, encode only and encode + snappy, medians of interleaved rounds. */
export function compareCodecs(
  entries: LogEntry[],
  batchSize = 1000,
  rounds = 5,
): { encodeOnly: Record<string, number>; withSnappy: Record<string, number> } {
  const contenders = { ours, protobufjs: referenceEncoder() };
  return {
    encodeOnly: race(entries, batchSize, contenders, false, rounds),
    withSnappy: race(entries, batchSize, contenders, true, rounds),
  };
}

if (import.meta.main) {
  const n = Number(process.argv[2] ?? 200_000);
  const batchSize = Number(process.argv[3] ?? 1000);
  const corpus = makeCorpus(n);
  const { encodeOnly, withSnappy } = compareCodecs(corpus, batchSize);
  const avgLineBytes = corpus.reduce((s, e) => s + e.lineBytes, 0) / corpus.length;
  const ratio = (r: Record<string, number>): number => Number((r.ours! / r.protobufjs!).toFixed(2));
  console.log(
    JSON.stringify({
      bench: "codec",
      entries: n,
      batchSize,
      avgLineBytes: Math.round(avgLineBytes),
      oursEps: Math.round(withSnappy.ours!),
      protobufjsEps: Math.round(withSnappy.protobufjs!),
      ratio: ratio(withSnappy),
      encodeOnly: {
        oursEps: Math.round(encodeOnly.ours!),
        protobufjsEps: Math.round(encodeOnly.protobufjs!),
        ratio: ratio(encodeOnly),
      },
    }),
  );
}

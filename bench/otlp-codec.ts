// OTLP encode against the Loki protobuf encoder (#28): entries/s of an ExportLogsServiceRequest
// (src/sinks/otlp/encode.ts) and of a Loki PushRequest (grouping + src/sinks/loki/encode-protobuf.ts)
// on the same batches of bench/codec.ts's corpus, carrying the labels the daemon gives every entry.
// Encode only, uncompressed: the compression is the operator's choice (snappy for Loki, gzip or none
// for OTLP). Rounds interleave the two; the ratio is taken per round. Target: ratio ≥ 0.8.
//   node bench/otlp-codec.ts [entries] [--samples N] [--min-window-ms MS]
import { parseArgs } from "node:util";
import { LogEntry } from "../src/model.ts";
import { encodePushRequest } from "../src/sinks/loki/encode-protobuf.ts";
import { groupStreams } from "../src/sinks/receiving-loki/streams.ts";
import { encodeExportLogsRequest } from "../src/sinks/otlp/encode.ts";
import { makeCorpus } from "./codec.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    samples: { type: "string", default: "5" },
    "min-window-ms": { type: "string", default: "2000" },
  },
});
const N = Number(positionals[0] ?? 200_000);
const SAMPLES = Number(values.samples);
const MIN_WINDOW_MS = Number(values["min-window-ms"]);
const BATCH = 1000;

/** What the producer's static-label merge leaves on every entry of a single-org daemon. */
const STATIC = {
  job: "sf2loki",
  service_name: "sf2loki",
  environment: "production",
  sf_org_id: "00D000000000001",
};

const corpus = makeCorpus(N).map(
  (e) =>
    new LogEntry({
      timestampNs: e.timestampNs,
      labels: { ...e.labels, ...STATIC },
      line: e.line,
      structuredMetadata: e.structuredMetadata,
      checkpoint: e.checkpoint,
      asciiLine: true,
    }),
);
const batches: LogEntry[][] = [];
for (let i = 0; i < corpus.length; i += BATCH) batches.push(corpus.slice(i, i + BATCH));

const OBSERVED = BigInt(Date.now()) * 1_000_000n;
const encoders: Record<string, (b: LogEntry[]) => Buffer> = {
  loki: (b) => encodePushRequest(groupStreams(b)),
  otlp: (b) => encodeExportLogsRequest(b, { serviceName: "sf2loki" }, OBSERVED),
};

/** Entries/s of passes over every batch, repeated until the window is at least MIN_WINDOW_MS / 2. */
function window(encode: (b: LogEntry[]) => Buffer): number {
  let entries = 0;
  let bytes = 0;
  const t0 = performance.now();
  do {
    for (const b of batches) bytes += encode(b).length;
    entries += corpus.length;
  } while (performance.now() - t0 < MIN_WINDOW_MS / 2);
  if (bytes === 0) throw new Error("nothing encoded");
  return entries / ((performance.now() - t0) / 1000);
}

// Warm-up: both optimised before the first window.
for (let r = 0; r < 3; r++) for (const encode of Object.values(encoders)) for (const b of batches) encode(b);

const samples: Record<string, number[]> = { loki: [], otlp: [], ratio: [] };
for (let s = 0; s < SAMPLES; s++) {
  // Alternate which goes first, so neither always runs on a warmer cache.
  const order = s % 2 === 0 ? ["loki", "otlp"] : ["otlp", "loki"];
  const eps: Record<string, number> = {};
  for (const name of order) eps[name] = window(encoders[name]!);
  samples.loki!.push(Math.round(eps.loki!));
  samples.otlp!.push(Math.round(eps.otlp!));
  samples.ratio!.push(Number((eps.otlp! / eps.loki!).toFixed(3)));
  process.stderr.write(
    `otlp-codec: sample ${s + 1}/${SAMPLES}: loki ${eps.loki!.toFixed(0)} otlp ${eps.otlp!.toFixed(0)} eps\n`,
  );
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[xs.length >> 1]!;
const bytesOf = (name: string): number =>
  batches.reduce((n, b) => n + encoders[name]!(b).length, 0) / corpus.length;
console.log(
  JSON.stringify({
    bench: "otlp_codec",
    entries: N,
    batch: BATCH,
    loki_eps: median(samples.loki!),
    loki_eps_samples: samples.loki,
    otlp_eps: median(samples.otlp!),
    otlp_eps_samples: samples.otlp,
    ratio: median(samples.ratio!),
    ratio_samples: samples.ratio,
    target_ratio: 0.8,
    loki_bytes_per_entry: Math.round(bytesOf("loki")),
    otlp_bytes_per_entry: Math.round(bytesOf("otlp")),
  }),
);

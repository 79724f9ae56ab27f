// What the sender does to every entry besides encoding it, one step at a time, in ns per entry: the
// per-entry checks and tallies of the push path, timed over bench/codec.ts's corpus with its entries
// cold (200 000 of them, ~240 MiB, walked in 1000-entry batches as the sink sees them), next to the
// codec on the same batches. A step that walks data the codec walks anyway costs its cache misses
// here; bench/README.md ("What the sender spends beyond the codec") reads these figures.
//
// Usage: node bench/entry-costs.ts [rounds=10]     prints one JSON line (ns per entry, CPU time)
import { metrics } from "@opentelemetry/api";
import { LogEntry, nsToNumber } from "../src/model.ts";
import { createMetrics } from "../src/obs/metrics.ts";
import { IngestTally } from "../src/pipeline/ingest-tally.ts";
import { PipelineMetrics } from "../src/pipeline/metrics.ts";
import { capLines } from "../src/sinks/wire/line-cap.ts";
import { checkLimits, LOKI_DEFAULT_LIMITS } from "../src/sinks/receiving-loki/limits.ts";
import { encodeRequestSync } from "../src/sinks/loki/request.ts";
import { makeCorpus } from "./codec.ts";

const ROUNDS = Number(process.argv[2] ?? 10);
if (!Number.isInteger(ROUNDS) || ROUNDS < 1) {
  process.stderr.write("usage: node bench/entry-costs.ts [rounds]\n");
  process.exit(2);
}

const corpus = makeCorpus(200_000);
// As the producer leaves them: entries of a run share one label object.
const labels = corpus[0]!.labels;
for (const e of corpus) e.labels = labels;
const batches: LogEntry[][] = [];
for (let i = 0; i < corpus.length; i += 1000) batches.push(corpus.slice(i, i + 1000));
const now = Date.now();

/** CPU ns per entry of `step` over every batch, ROUNDS times, after three untimed rounds. */
function nsPerEntry(step: (batch: LogEntry[]) => unknown): number {
  for (let r = 0; r < 3; r++) for (const b of batches) step(b);
  const cpu0 = process.cpuUsage();
  for (let r = 0; r < ROUNDS; r++) for (const b of batches) step(b);
  const cpu = process.cpuUsage(cpu0);
  return Math.round((((cpu.user + cpu.system) * 1000) / (ROUNDS * corpus.length)) * 10) / 10;
}

/** The ingest tally as a pipeline builds it, on `meter`. */
function tally(meter: ReturnType<typeof metrics.getMeter>): IngestTally {
  const m = new PipelineMetrics(
    meter,
    () => 0,
    () => 0,
  );
  return new IngestTally("eventlog_objects", m.ingested, m.ingestLag);
}

const noopTally = tally(metrics.getMeter("bench"));
const daemon = createMetrics({ version: "bench" });
const daemonTally = tally(daemon.meter);
let sink = 0;

const report = {
  bench: "entry_costs",
  entries: corpus.length,
  rounds: ROUNDS,
  check_limits_ns: nsPerEntry((b) => checkLimits(b, LOKI_DEFAULT_LIMITS, now)),
  cap_lines_ns: nsPerEntry((b) => {
    capLines(b, 262_144, () => undefined);
  }),
  ingest_tally_noop_meter_ns: nsPerEntry((b) => {
    for (const e of b) noopTally.record(e, now);
  }),
  ingest_tally_daemon_meter_ns: nsPerEntry((b) => {
    for (const e of b) daemonTally.record(e, now);
  }),
  // The conversion the tally makes, alone: V8's Number(bigint) against the int64-halves read.
  number_of_bigint_ns: nsPerEntry((b) => {
    for (const e of b) sink += Number(e.timestampNs);
  }),
  ns_to_number_ns: nsPerEntry((b) => {
    for (const e of b) sink += nsToNumber(e.timestampNs);
  }),
  codec_ns: nsPerEntry((b) => encodeRequestSync(b, "protobuf-snappy")),
};
await daemon.shutdown();
if (Number.isNaN(sink)) throw new Error("unreachable: keeps the conversions from being optimised away");
console.log(JSON.stringify(report));

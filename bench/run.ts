// `npm run bench`: every data-path figure in one process run, printed as ONE JSON object on stdout,
// and a table of each figure beside its baseline (bench/baseline.json) on stderr with the progress.
// Every figure is the median of SAMPLES timed windows of at least MIN_WINDOW_MS each (bench/sample.ts),
// with its spread; ratios are taken per sample between windows that ran interleaved or back to back.
// bench/README.md says what each figure means and how to read spread and baseline.
//   node bench/run.ts [--quick] [--update-baseline]
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import {
  BASELINE_PATH,
  compareWithBaseline,
  readBaseline,
  renderTable,
  writeBaseline,
  type Better,
  type RunFigure,
} from "./baseline.ts";
import { codecPasses, makeCorpus, type CodecWindow } from "./codec.ts";
import { pairedSamples } from "./paired.ts";
import {
  e2ePass,
  e2eWindow,
  forkRssProbe,
  startChildReceiver,
  startInProcessReceiver,
  type BenchReceiver,
  type E2eWindow,
} from "./pipeline.ts";
import { benchPipelineNoop, pipelineNoopPass } from "./pipeline-noop.ts";
import { medianSample, summarise, timedWindow, total } from "./sample.ts";

const { values: flags } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    "update-baseline": { type: "boolean", default: false },
    /** Adds the 5M-row EventLogFile drain (~1 min more): the flat-peak bar. */
    large: { type: "boolean", default: false },
  },
});
const QUICK = flags.quick;
if (QUICK && flags["update-baseline"]) {
  process.stderr.write("bench: --update-baseline records a full run only; run it without --quick\n");
  process.exit(2);
}

const ENTRIES = QUICK ? 50_000 : 200_000;
/** A timed window is at least this long: a pass under a second is mostly scheduler noise. */
const MIN_WINDOW_MS = QUICK ? 250 : 2000;
/** Windows per figure; the figure is their median. */
const SAMPLES = QUICK ? 3 : 5;
/** With 1000-entry batches and 100 ms per response, in-flight 1 takes ≥ 2.4 s per pass. */
const RTT_ENTRIES = QUICK ? 6_000 : 24_000;
const RTT_MS = 100;
const RTT_MAX_ENTRIES = 1000;
/** ~1.1 MiB of lines with the corpus's ~280-byte lines: above the size that once left the loop. */
const LARGE_BATCH_ENTRIES = 4000;

const TARGETS = {
  pipeline_noop_eps: 500_000,
  e2e_eps: 150_000,
  e2e_over_codec: 0.6,
  inflight_gain: 3.5,
  peak_rss_mib: 300,
};

// ------------------------------------------------------------------ child benches
//
// Standalone bench scripts that run in their own process (a fresh heap, their own peers) and print
// ONE JSON object as the last line of stdout; progress goes to their stderr, which is passed through.
// To wire a new one in, add an entry to CHILD_BENCHES: its JSON lands in the report under `key`, and
// every top-level number named in `figures` becomes a figure `<key>.<name>` printed beside its
// baseline. If the script also prints `<name>_samples` (an array of numbers, one per timed window)
// the figure gets a spread; otherwise its spread is null and it is compared as a single measurement.
// Keep each child's timed windows ≥ 2 s and the whole child within ~30 s (the run's budget is
// ~3–4 min on 2 cores); pass `quick` through so `--quick` stays ~20 s.

interface ChildBench {
  /** The report key and the figure prefix. */
  key: string;
  /** Path relative to bench/. */
  script: string;
  args: (quick: boolean) => string[];
  /** Top-level numeric fields of the child's JSON that are figures, and which way is better. */
  figures: Record<string, Better>;
}

const CHILD_BENCHES: ChildBench[] = [
  {
    // OTLP encode against the Loki protobuf encoder on the same batches (#28; target ratio ≥ 0.8).
    key: "otlp_codec",
    script: "otlp-codec.ts",
    args: (quick) =>
      quick ? ["50000", "--samples", "3", "--min-window-ms", "500"] : ["200000", "--samples", "5"],
    figures: { loki_eps: "higher", otlp_eps: "higher", ratio: "higher" },
  },
  {
    // Many streams against one (#37): 3- and 20-stream corpora against the same as 1 stream (target ≥ 0.95).
    key: "streams_per_request",
    script: "streams-per-request.ts",
    args: (quick) =>
      quick ? ["30000", "--samples", "2", "--min-window-ms", "500"] : ["100000", "--samples", "4"],
    figures: { median_ratio_3_streams_over_1: "higher", median_ratio_20_streams_over_1: "higher" },
  },
  {
    key: "pubsub",
    script: "pubsub.ts",
    args: (quick) =>
      quick ? ["10000", "--samples", "3", "--min-window-ms", "250"] : ["30000", "--samples", "5"],
    figures: {
      ours_eps: "higher",
      reference_eps: "higher",
      ratio: "higher",
      ours_source_eps: "higher",
      source_ratio: "higher",
    },
  },
  {
    // The daemon's EventLogFile drain (issue #15's bar: 1M rows < 10 s, peak RSS < 200 MiB, flat to 5M,
    // CPU >= 80 % of wall), with the daemon's V8 flags and without, run from the compiled build as the
    // image runs it (the TypeScript loader would add ~26 MiB). `--large` adds the 5M-row run (~2 min).
    key: "elf_daemon",
    script: "eventlogfile-daemon.ts",
    args: (quick) => [
      "--dist",
      ...(quick ? ["100000"] : ["250000", "1000000", ...(flags.large ? ["5000000"] : [])]),
    ],
    figures: quickOr(
      {
        flags_100000_seconds: "lower",
        flags_100000_peak_rss_mib: "lower",
        flags_100000_cpu_over_wall: "higher",
      },
      {
        flags_250000_cpu_over_wall: "higher",
        flags_250000_peak_rss_mib: "lower",
        flags_1000000_seconds: "lower",
        flags_1000000_cpu_seconds: "lower",
        flags_1000000_cpu_over_wall: "higher",
        flags_1000000_peak_rss_mib: "lower",
        none_1000000_peak_rss_mib: "lower",
        none_1000000_cpu_seconds: "lower",
      },
    ),
  },
  {
    // A steady 3-topic Pub/Sub stream at 5k events/s through the daemon (bar: RSS < 150 MiB after 60 s),
    // run from the compiled build with the daemon's flags and environment, as the image runs it.
    key: "pubsub_steady",
    script: "pubsub-steady.ts",
    args: (quick) => (quick ? ["10", "5000", "--dist"] : ["60", "5000", "--dist"]),
    figures: { rss_end_mib: "lower", peak_rss_mib: "lower", cpu_over_wall: "lower" },
  },
  {
    // The daemon's RSS after start, idle and on the demo config with a file or an S3 store (compiled).
    key: "startup",
    script: "startup-rss.ts",
    args: (quick) => (quick ? ["3", "--dist"] : ["8", "--dist"]),
    figures: {
      idle_file_store_rss_end_mib: "lower",
      demo_file_store_rss_end_mib: "lower",
      demo_s3_store_rss_end_mib: "lower",
    },
  },
];

/** The figures a child prints depend on `--quick` when its sizes do. */
function quickOr(quick: Record<string, Better>, full: Record<string, Better>): Record<string, Better> {
  return process.argv.includes("--quick") ? quick : full;
}

/** Runs `node bench/<script> ...args` and returns the last stdout line as JSON. */
async function runChildBench(script: string, args: string[]): Promise<Record<string, unknown>> {
  const path = fileURLToPath(new URL(`./${script}`, import.meta.url));
  const child = spawn(process.execPath, [path, ...args], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  const last = out.trim().split("\n").at(-1) ?? "";
  if (code !== 0) throw new Error(`bench/${script} exited with ${code}: ${last}`);
  try {
    return JSON.parse(last) as Record<string, unknown>;
  } catch (err) {
    throw new Error(`bench/${script} did not end with a JSON line (got: ${last.slice(0, 200)})`, {
      cause: err,
    });
  }
}

/** `tsc -p tsconfig.build.json`, as `npm run build` does; throws with its output when it fails. */
async function buildDist(): Promise<void> {
  const tsc = fileURLToPath(new URL("../node_modules/typescript/bin/tsc", import.meta.url));
  const cwd = fileURLToPath(new URL("..", import.meta.url));
  const child = spawn(process.execPath, [tsc, "-p", "tsconfig.build.json"], {
    cwd,
    stdio: ["ignore", "pipe", "pipe"],
  });
  let out = "";
  child.stdout.on("data", (chunk: Buffer) => (out += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (out += chunk.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  if (code !== 0) throw new Error(`building dist/ failed (exit ${code}):\n${out}`);
}

/** The figures a child bench reported, each with the spread of its samples when it gave them. */
function childFigures(bench: ChildBench, json: Record<string, unknown>): Record<string, RunFigure> {
  const out: Record<string, RunFigure> = {};
  for (const [name, better] of Object.entries(bench.figures)) {
    const value = json[name];
    if (typeof value !== "number") {
      throw new Error(
        `bench/${bench.script} printed no number for "${name}"; fix the script or CHILD_BENCHES`,
      );
    }
    const samples = json[`${name}_samples`];
    const figure = Array.isArray(samples) && samples.length > 0 ? summarise(samples as number[]) : undefined;
    out[`${bench.key}.${name}`] = {
      median: value,
      spread: figure?.spread ?? null,
      samples: figure?.samples ?? [value],
      better,
    };
  }
  return out;
}

// ------------------------------------------------------------------ the run

const started = performance.now();
const loadAtStart = Math.round(loadavg()[0]! * 100) / 100;
function progress(what: string): void {
  const at = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(`[bench ${at}s] ${what}\n`);
}

const round2 = (x: number): number => Math.round(x * 100) / 100;
const figures: Record<string, RunFigure> = {};
function figure(name: string, samples: readonly number[], better: Better): RunFigure {
  const f = { ...summarise(samples), better };
  figures[name] = f;
  return f;
}

async function withReceiver<T>(
  start: () => Promise<BenchReceiver>,
  fn: (r: BenchReceiver) => Promise<T>,
): Promise<T> {
  const receiver = await start();
  try {
    return await fn(receiver);
  } finally {
    await receiver.stop();
  }
}

/**
 * A warm-up window (discarded: the code and the receiver child reach their optimised tiers first;
 * with one warm-up pass the first sample ran ~20 % slow), then SAMPLES windows against one receiver.
 */
async function e2eWindows(
  entries: Parameters<typeof e2ePass>[0],
  receiver: BenchReceiver,
): Promise<E2eWindow[]> {
  await e2eWindow(entries, receiver, MIN_WINDOW_MS);
  const windows: E2eWindow[] = [];
  for (let i = 0; i < SAMPLES; i++) windows.push(await e2eWindow(entries, receiver, MIN_WINDOW_MS));
  return windows;
}

/** Wall ms and CPU of the median window, per pass and per entry. */
const cpuSplit = (windows: E2eWindow[]) => {
  const w = medianSample(windows, (x) => x.eps);
  return {
    window_ms: w.ms,
    passes: w.passes,
    sender_cpu_ms: w.sender_cpu_ms,
    receiver_cpu_ms: w.receiver_cpu_ms ?? null,
    sender_cpu_us_per_entry: w.sender_cpu_us_per_entry,
    receiver_cpu_us_per_entry: w.receiver_cpu_us_per_entry ?? null,
  };
};

// Forked before this process grows, so their maxRSS is their own (see forkRssProbe).
const rssProbes = { streamed: await forkRssProbe("streamed"), prebuilt: await forkRssProbe("prebuilt") };

progress(
  `building corpus of ${ENTRIES} entries; ${SAMPLES} windows of ≥ ${MIN_WINDOW_MS} ms per figure` +
    (QUICK ? " (--quick)" : ""),
);
const corpus = makeCorpus(ENTRIES);
const avgLineBytes = Math.round(corpus.reduce((sum, e) => sum + e.lineBytes, 0) / corpus.length);

// The headline ratio: codec and e2e passes interleaved within each sample (bench/paired.ts), so each
// ratio compares two windows that saw the same host, and its spread is the spread of the ratio itself.
const codec = codecPasses(corpus, 1000);
const codecSamples: CodecWindow[] = [];
const { e2eChild, rtt, large } = await withReceiver(
  () => startChildReceiver("loki"),
  async (r) => {
    progress("codec (protobuf + snappy on pre-built 1000-entry batches) paired with e2e into the Loki child");
    const paired = await pairedSamples(codec, corpus, r, SAMPLES, MIN_WINDOW_MS);
    codecSamples.push(...paired.map((p) => p.codec));
    const e2eChild = paired.map((p) => p.e2e);
    progress(`rtt ${RTT_MS} ms, max_in_flight 1 and 4 paired (${RTT_ENTRIES} entries per pass)`);
    const rttCorpus = corpus.slice(0, RTT_ENTRIES);
    const inFlight = (n: number) => ({ max_entries: RTT_MAX_ENTRIES, max_in_flight: n });
    const rtt = { one: [] as E2eWindow[], four: [] as E2eWindow[] };
    for (let i = 0; i < SAMPLES; i++) {
      rtt.one.push(await e2eWindow(rttCorpus, r, MIN_WINDOW_MS, inFlight(1), RTT_MS));
      rtt.four.push(await e2eWindow(rttCorpus, r, MIN_WINDOW_MS, inFlight(4), RTT_MS));
    }
    // Batches of 1 MiB of lines and more used to leave the event loop for snappy, at 2-3x the CPU
    // per entry: 4 000-entry batches (~1.1 MiB of lines) against the default 1 000, interleaved.
    progress("e2e with 4000-entry batches paired with 1000-entry ones (the large-batch path)");
    const batchSize = (n: number) => ({ max_entries: n });
    const large = { small: [] as E2eWindow[], large: [] as E2eWindow[] };
    for (let i = 0; i < SAMPLES; i++) {
      large.small.push(await e2eWindow(corpus, r, MIN_WINDOW_MS, batchSize(1000)));
      large.large.push(await e2eWindow(corpus, r, MIN_WINDOW_MS, batchSize(LARGE_BATCH_ENTRIES)));
    }
    return { e2eChild, rtt, large };
  },
);
const codecFig = figure(
  "codec_eps",
  codecSamples.map((w) => w.eps),
  "higher",
);
const e2eFig = figure(
  "e2e_eps",
  e2eChild.map((w) => w.eps),
  "higher",
);
const e2eOverCodec = figure(
  "e2e_over_codec",
  e2eChild.map((w, i) => w.eps / codecSamples[i]!.eps),
  "higher",
);
figure(
  "codec_cpu_us_per_entry",
  codecSamples.map((w) => w.cpu_us_per_entry),
  "lower",
);
figure(
  "sender_cpu_us_per_entry",
  e2eChild.map((w) => w.sender_cpu_us_per_entry),
  "lower",
);
figure(
  "codec_share_of_sender_cpu",
  e2eChild.map((w, i) => codecSamples[i]!.cpu_us_per_entry / w.sender_cpu_us_per_entry),
  "higher",
);
figure(
  "receiver_cpu_us_per_entry",
  e2eChild.map((w) => w.receiver_cpu_us_per_entry ?? 0),
  "lower",
);
const rtt1 = figure(
  "rtt100_eps_inflight1",
  rtt.one.map((w) => w.eps),
  "higher",
);
const rtt4 = figure(
  "rtt100_eps_inflight4",
  rtt.four.map((w) => w.eps),
  "higher",
);
const inflightGain = figure(
  "inflight_gain",
  rtt.four.map((w, i) => w.eps / rtt.one[i]!.eps),
  "higher",
);
figure(
  "e2e_4000_sender_cpu_us_per_entry",
  large.large.map((w) => w.sender_cpu_us_per_entry),
  "lower",
);
figure(
  "batch_4000_over_1000_sender_cpu",
  large.large.map((w, i) => w.sender_cpu_us_per_entry / large.small[i]!.sender_cpu_us_per_entry),
  "lower",
);

progress("pipeline into a no-op sink");
await benchPipelineNoop(corpus.slice(0, 20_000)); // warm-up: optimise the pipeline's code first
const noopSamples: number[] = [];
for (let i = 0; i < SAMPLES; i++) {
  const passes = await timedWindow(MIN_WINDOW_MS, () => pipelineNoopPass(corpus));
  noopSamples.push((passes.length * corpus.length) / (total(passes, (p) => p.ms) / 1000));
}
const noopFig = figure("pipeline_noop_eps", noopSamples, "higher");

progress("e2e, Loki receiver in this process");
const e2eInProcess = await withReceiver(startInProcessReceiver, (r) => e2eWindows(corpus, r));
figure(
  "e2e_in_process_receiver_eps",
  e2eInProcess.map((w) => w.eps),
  "higher",
);

progress("e2e, drain-only receiver in a child process");
const e2eDrain = await withReceiver(
  () => startChildReceiver("drain"),
  (r) => e2eWindows(corpus, r),
);
const drainFig = figure(
  "e2e_drain_receiver_eps",
  e2eDrain.map((w) => w.eps),
  "higher",
);
figure(
  "drain_sender_cpu_us_per_entry",
  e2eDrain.map((w) => w.sender_cpu_us_per_entry),
  "lower",
);

progress("peak RSS: one e2e pass in a fresh process, streamed then pre-built corpus");
const { rss, rssPrebuilt } = await withReceiver(
  () => startChildReceiver("loki"),
  async (r) => ({
    rss: await rssProbes.streamed.measure(r, ENTRIES),
    rssPrebuilt: await rssProbes.prebuilt.measure(r, ENTRIES),
  }),
);
// One fresh process, one pass: a footprint, not a timing, so one measurement and no spread.
figures.peak_rss_mib = {
  median: rss.peak_rss_mib,
  spread: null,
  samples: [rss.peak_rss_mib],
  better: "lower",
};
const benchProcessRss = Math.round(process.resourceUsage().maxRSS / 1024);

// The daemon benches that run the image's entry point need dist/ as this checkout has it (~7 s).
progress("npm run build (dist/ for the benches that run the compiled daemon)");
await buildDist();

const children: Record<string, Record<string, unknown>> = {};
for (const bench of CHILD_BENCHES) {
  const args = bench.args(QUICK);
  progress(`${bench.key}: node bench/${bench.script} ${args.join(" ")}`);
  children[bench.key] = await runChildBench(bench.script, args);
  Object.assign(figures, childFigures(bench, children[bench.key]!));
}

const baseline = readBaseline();
// A --quick run uses fewer entries and shorter windows than the full run a baseline holds: no verdicts.
const compared = compareWithBaseline(figures, baseline, !QUICK);
const loadAtEnd = round2(loadavg()[0]!);

const report = {
  bench: "data-path",
  quick: QUICK,
  node: process.version,
  entries: ENTRIES,
  avg_line_bytes: avgLineBytes,
  codec_eps: codecFig.median,
  pipeline_noop_eps: noopFig.median,
  e2e_eps: e2eFig.median,
  e2e_receiver: "simulated Loki in a child process",
  e2e_over_codec: e2eOverCodec.median,
  rtt100_eps_inflight1: rtt1.median,
  rtt100_eps_inflight4: rtt4.median,
  inflight_gain: inflightGain.median,
  python_ceiling_eps: RTT_MAX_ENTRIES / (RTT_MS / 1000),
  peak_rss_mib: rss.peak_rss_mib,
  ...children,
  targets: {
    pipeline_noop_eps: noopFig.median >= TARGETS.pipeline_noop_eps,
    e2e_eps: e2eFig.median >= TARGETS.e2e_eps,
    e2e_over_codec: e2eOverCodec.median >= TARGETS.e2e_over_codec,
    inflight_gain: inflightGain.median >= TARGETS.inflight_gain,
    peak_rss_mib: rss.peak_rss_mib < TARGETS.peak_rss_mib,
  },
  /** Every figure: median, spread, samples, baseline, change (median ÷ baseline) and verdict. */
  figures: compared,
  baseline: baseline
    ? { file: "bench/baseline.json", recorded_at: baseline.recorded_at, commit: baseline.commit }
    : null,
  detail: {
    samples: SAMPLES,
    min_window_ms: MIN_WINDOW_MS,
    e2e_cpu: cpuSplit(e2eChild),
    e2e_in_process_cpu: cpuSplit(e2eInProcess),
    e2e_drain_cpu: cpuSplit(e2eDrain),
    e2e_drain_over_codec: round2(drainFig.median / codecFig.median),
    e2e_over_pipeline_noop: round2(e2eFig.median / noopFig.median),
    rtt: { latency_ms: RTT_MS, entries: RTT_ENTRIES, max_entries: RTT_MAX_ENTRIES },
    peak_rss_corpus: "streamed",
    peak_rss_before_pass_mib: rss.before_pass_mib,
    peak_rss_vmhwm_mib: rss.vmhwm_mib ?? null,
    peak_rss_prebuilt_corpus_mib: rssPrebuilt.peak_rss_mib,
    peak_rss_prebuilt_before_pass_mib: rssPrebuilt.before_pass_mib,
    bench_process_peak_rss_mib: benchProcessRss,
    target_thresholds: TARGETS,
    // Other work on this host skews every figure; a load above the core count means noisy numbers.
    load_avg_1m: { start: loadAtStart, end: loadAtEnd },
    cores: availableParallelism(),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  },
};

process.stderr.write(
  `\nfigures (median of ${SAMPLES} windows ≥ ${MIN_WINDOW_MS} ms) beside ` +
    (baseline
      ? `bench/baseline.json (${baseline.recorded_at}, ${baseline.commit ?? "no commit"})`
      : "no baseline yet") +
    `; load ${loadAtStart} → ${loadAtEnd} on ${availableParallelism()} cores\n` +
    renderTable(compared),
);
if (flags["update-baseline"]) {
  writeBaseline(figures, {
    node: process.version,
    cores: availableParallelism(),
    load_avg_1m: { start: loadAtStart, end: loadAtEnd },
  });
  progress(`baseline written to ${BASELINE_PATH}`);
}
progress("done");
process.stdout.write(JSON.stringify(report, null, 2) + "\n");

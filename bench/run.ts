// `npm run bench`: every data-path figure in one process run, printed as ONE JSON object on stdout
// (progress goes to stderr). Ratios are taken between figures measured in this run on the same
// corpus; bench/README.md says what each figure means.
//   node bench/run.ts [--quick]
import { spawn } from "node:child_process";
import { availableParallelism, loadavg } from "node:os";
import { fileURLToPath } from "node:url";
import { benchCodec, makeCorpus } from "./codec.ts";
import {
  e2eMedian,
  e2ePass,
  forkRssProbe,
  median,
  startChildReceiver,
  startInProcessReceiver,
  type BenchReceiver,
  type MedianResult,
} from "./pipeline.ts";
import { benchPipelineNoop } from "./pipeline-noop.ts";

const QUICK = process.argv.includes("--quick");
const ENTRIES = QUICK ? 50_000 : 200_000;
const RTT_ENTRIES = QUICK ? 20_000 : 60_000;
const RTT_MS = 100;
const RTT_MAX_ENTRIES = 1000;
const PUBSUB_EVENTS = QUICK ? 10_000 : 50_000;
const ROUNDS = 3;

const TARGETS = {
  pipeline_noop_eps: 500_000,
  e2e_eps: 150_000,
  e2e_over_codec: 0.5,
  inflight_gain: 3.5,
  peak_rss_mib: 300,
};

const started = performance.now();
const loadAtStart = Math.round(loadavg()[0]! * 100) / 100;
function progress(what: string): void {
  const at = ((performance.now() - started) / 1000).toFixed(1);
  process.stderr.write(`[bench ${at}s] ${what}\n`);
}

const round2 = (x: number): number => Math.round(x * 100) / 100;

/** Runs `node bench/pubsub.ts` (it exits the process itself) and returns its last stdout line as JSON. */
async function pubsubChild(events: number): Promise<unknown> {
  const script = fileURLToPath(new URL("./pubsub.ts", import.meta.url));
  const child = spawn(process.execPath, [script, String(events)], { stdio: ["ignore", "pipe", "inherit"] });
  let out = "";
  child.stdout.setEncoding("utf8");
  child.stdout.on("data", (chunk: string) => (out += chunk));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once("error", reject);
    child.once("close", resolve);
  });
  const last = out.trim().split("\n").at(-1) ?? "";
  if (code !== 0) throw new Error(`bench/pubsub.ts exited with ${code}: ${last}`);
  return JSON.parse(last) as unknown;
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

// Forked before this process grows, so their maxRSS is their own (see forkRssProbe).
const rssProbes = { streamed: await forkRssProbe("streamed"), prebuilt: await forkRssProbe("prebuilt") };

progress(`building corpus of ${ENTRIES} entries${QUICK ? " (--quick)" : ""}`);
const corpus = makeCorpus(ENTRIES);
const avgLineBytes = Math.round(corpus.reduce((sum, e) => sum + e.lineBytes, 0) / corpus.length);

progress("codec: protobuf + snappy on pre-built 1000-entry batches");
const codecEps = Math.round(benchCodec(corpus, 1000, ROUNDS).eps);

progress("pipeline into a no-op sink");
await benchPipelineNoop(corpus.slice(0, 20_000)); // warm-up: optimise the pipeline's code first
const noopSamples: number[] = [];
for (let i = 0; i < ROUNDS; i++) noopSamples.push((await benchPipelineNoop(corpus)).eps);
const noopEps = median(noopSamples);

progress("e2e, Loki receiver in this process");
const e2eInProcess = await withReceiver(startInProcessReceiver, (r) => e2eMedian(corpus, r, ROUNDS));

progress("e2e, drain-only receiver in a child process");
const e2eDrain = await withReceiver(
  () => startChildReceiver("drain"),
  (r) => e2eMedian(corpus, r, ROUNDS),
);

const rttCorpus = corpus.slice(0, RTT_ENTRIES);
const rttBatch = (inFlight: number) => ({ max_entries: RTT_MAX_ENTRIES, max_in_flight: inFlight });
const { e2eChild, rtt1, rtt4Samples, rss, rssPrebuilt } = await withReceiver(
  () => startChildReceiver("loki"),
  async (r) => {
    progress("e2e, Loki receiver in a child process");
    const e2eChild = await e2eMedian(corpus, r, ROUNDS);
    progress(`rtt ${RTT_MS} ms, max_in_flight 1 (${RTT_ENTRIES} entries)`);
    const rtt1 = await e2ePass(rttCorpus, r, rttBatch(1), RTT_MS);
    progress(`rtt ${RTT_MS} ms, max_in_flight 4 (median of ${ROUNDS})`);
    const rtt4Samples: number[] = [];
    for (let i = 0; i < ROUNDS; i++) rtt4Samples.push((await e2ePass(rttCorpus, r, rttBatch(4), RTT_MS)).eps);
    progress("peak RSS: one e2e pass in a fresh process, streamed then pre-built corpus");
    const rss = await rssProbes.streamed.measure(r, ENTRIES);
    const rssPrebuilt = await rssProbes.prebuilt.measure(r, ENTRIES);
    return { e2eChild, rtt1, rtt4Samples, rss, rssPrebuilt };
  },
);
const rtt4Eps = median(rtt4Samples);
const benchProcessRss = Math.round(process.resourceUsage().maxRSS / 1024);

progress(`pubsub: node bench/pubsub.ts ${PUBSUB_EVENTS}`);
const pubsub = await pubsubChild(PUBSUB_EVENTS);

const e2eEps = e2eChild.eps;
const e2eOverCodec = round2(e2eEps / codecEps);
const inflightGain = round2(rtt4Eps / rtt1.eps);
const peakRss = rss.peak_rss_mib;

/** Wall ms of the median pass next to the CPU ms each side spent in it. */
const cpuSplit = (r: MedianResult) => ({
  wall_ms: r.median.ms,
  sender_cpu_ms: r.median.sender_cpu_ms,
  receiver_cpu_ms: r.median.receiver_cpu_ms ?? null,
});

const report = {
  bench: "data-path",
  quick: QUICK,
  node: process.version,
  entries: ENTRIES,
  avg_line_bytes: avgLineBytes,
  codec_eps: codecEps,
  pipeline_noop_eps: noopEps,
  e2e_eps: e2eEps,
  e2e_receiver: "simulated Loki in a child process",
  e2e_over_codec: e2eOverCodec,
  rtt100_eps_inflight1: rtt1.eps,
  rtt100_eps_inflight4: rtt4Eps,
  inflight_gain: inflightGain,
  python_ceiling_eps: RTT_MAX_ENTRIES / (RTT_MS / 1000),
  peak_rss_mib: peakRss,
  pubsub,
  targets: {
    pipeline_noop_eps: noopEps >= TARGETS.pipeline_noop_eps,
    e2e_eps: e2eEps >= TARGETS.e2e_eps,
    e2e_over_codec: e2eOverCodec >= TARGETS.e2e_over_codec,
    inflight_gain: inflightGain >= TARGETS.inflight_gain,
    peak_rss_mib: peakRss < TARGETS.peak_rss_mib,
  },
  detail: {
    rounds: ROUNDS,
    pipeline_noop_samples: noopSamples,
    e2e_samples: e2eChild.samples,
    e2e_cpu: cpuSplit(e2eChild),
    e2e_in_process_receiver_eps: e2eInProcess.eps,
    e2e_in_process_samples: e2eInProcess.samples,
    e2e_in_process_cpu: cpuSplit(e2eInProcess),
    e2e_drain_receiver_eps: e2eDrain.eps,
    e2e_drain_samples: e2eDrain.samples,
    e2e_drain_cpu: cpuSplit(e2eDrain),
    e2e_drain_over_codec: round2(e2eDrain.eps / codecEps),
    e2e_over_pipeline_noop: round2(e2eEps / noopEps),
    rtt: { latency_ms: RTT_MS, entries: RTT_ENTRIES, max_entries: RTT_MAX_ENTRIES },
    rtt100_inflight4_samples: rtt4Samples,
    peak_rss_corpus: "streamed",
    peak_rss_before_pass_mib: rss.before_pass_mib,
    peak_rss_vmhwm_mib: rss.vmhwm_mib ?? null,
    peak_rss_prebuilt_corpus_mib: rssPrebuilt.peak_rss_mib,
    peak_rss_prebuilt_before_pass_mib: rssPrebuilt.before_pass_mib,
    bench_process_peak_rss_mib: benchProcessRss,
    target_thresholds: TARGETS,
    // Other work on this host skews every figure; a load above the core count means noisy numbers.
    load_avg_1m: { start: loadAtStart, end: round2(loadavg()[0]!) },
    cores: availableParallelism(),
    seconds: Math.round((performance.now() - started) / 100) / 10,
  },
};
progress("done");
process.stdout.write(JSON.stringify(report, null, 2) + "\n");

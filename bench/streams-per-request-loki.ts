// What many streams cost the real Loki (#37): the streams_per_request corpus (bench/streams-per-
// request.ts: one stream, and the same entries over 3 and over 20 streams in runs of 100) end to end
// into Grafana Loki 3.4.6 (../shared/loki), with Loki's CPU per million entries beside the sender's.
// Each pass pushes a fresh copy (timestamps one nanosecond later per pass), so Loki stores every entry
// instead of dropping a repeat, and at the end a count_over_time must find every entry of every pass:
// a lost or doubled one voids the run. The tenant's limits are lifted, so the figures are the work, not
// a configured rate. Not part of `npm run bench` (it needs ../shared/loki). One JSON line.
//   node bench/streams-per-request-loki.ts [entries] [--samples N]
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { LogEntry } from "../src/model.ts";
import { LOKI_DEFAULT_LIMITS } from "../src/sinks/receiving-loki/limits.ts";
import { startRealLoki, type RealLoki } from "../test/loki-real/support/real-loki.ts";
import { makeCorpus, spreadOver } from "./codec.ts";
import { e2ePass, type BenchReceiver, type E2eResult, type ReceiverCounts } from "./pipeline.ts";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { samples: { type: "string", default: "4" } },
});
const N = Number(positionals[0] ?? 100_000);
const SAMPLES = Number(values.samples);
const TENANT = "streams";
const TICKS_PER_S = 100;
/** As in bench/streams-per-request.ts, and as the tenant's overrides below: no per-stream rate in the way. */
const LIMITS = {
  ...LOKI_DEFAULT_LIMITS,
  per_stream_rate_limit: 2 ** 30,
  per_stream_rate_limit_burst: 2 ** 30,
};

/** Sums every series of `name` in a Prometheus text page whose labels include `match` (or any). */
function sumOf(text: string, name: string, match = ""): number {
  let total = 0;
  for (const m of text.matchAll(new RegExp(`^${name}(\\{[^}]*\\})?\\s+(\\S+)`, "gm")))
    if ((m[1] ?? "").includes(match)) total += Number(m[2]);
  return total;
}

/**
 * The real Loki as a bench receiver: what it accepted and how many pushes it served, since the last
 * reset, from its own /metrics (not from the sender), and its process's CPU from /proc.
 */
function receiverOf(loki: RealLoki, pid: number): BenchReceiver {
  const read = async (): Promise<{ lines: number; requests: number }> => {
    const text = await (await fetch(`${loki.url}/metrics`)).text();
    return {
      lines: sumOf(text, "loki_distributor_lines_received_total", `tenant="${TENANT}"`),
      requests: sumOf(text, "loki_request_duration_seconds_count", 'route="loki_api_v1_push"'),
    };
  };
  let base = { lines: 0, requests: 0 };
  return {
    pushUrl: loki.pushUrl,
    tenant: TENANT,
    lost: new AbortController().signal,
    setLatency: () => Promise.reject(new Error("the real Loki takes no injected latency")),
    reset: async () => {
      base = await read();
    },
    counts: async (): Promise<ReceiverCounts> => {
      const now = await read();
      const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
      const ticks = Number(fields[11]) + Number(fields[12]);
      return {
        accepted: now.lines - base.lines,
        requests: now.requests - base.requests,
        cpuMicros: (ticks / TICKS_PER_S) * 1e6,
      };
    },
    stop: () => loki.stop(),
  };
}

let pass = 0;
/** `corpus` one nanosecond later than the pass before: new entries to Loki, the same work to us. */
function fresh(corpus: readonly LogEntry[]): LogEntry[] {
  const shift = BigInt(++pass);
  return corpus.map(
    (e) =>
      new LogEntry({
        timestampNs: e.timestampNs + shift,
        labels: e.labels,
        line: e.line,
        structuredMetadata: e.structuredMetadata,
        checkpoint: e.checkpoint,
      }),
  );
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  return Number(s[Math.floor(s.length / 2)]!.toFixed(3));
};

const single = makeCorpus(N);
const shapes = { one: single, three: spreadOver(single, 3), twenty: spreadOver(single, 20) };
type Shape = keyof typeof shapes;

const loki = await startRealLoki();
try {
  await loki.setLimits({
    [TENANT]: {
      ingestion_rate_mb: 10_000,
      ingestion_burst_size_mb: 10_000,
      per_stream_rate_limit: "10GB",
      per_stream_rate_limit_burst: "10GB",
    },
  });
  const pid = Number(readFileSync(join(loki.dir, "loki.pid"), "utf8").trim());
  const receiver = receiverOf(loki, pid);
  const run = (corpus: readonly LogEntry[]): Promise<E2eResult> =>
    e2ePass(fresh(corpus), receiver, {}, 0, LIMITS);
  await run(single); // warm-up: Loki's first stream, our JIT
  const results: Record<Shape, E2eResult[]> = { one: [], three: [], twenty: [] };
  for (let i = 0; i < SAMPLES; i++)
    for (const shape of Object.keys(shapes) as Shape[]) results[shape].push(await run(shapes[shape]));
  const startNs = single[0]!.timestampNs - 3_600_000_000_000n;
  const endNs = BigInt(Date.now() + 60_000) * 1_000_000n;
  const stored = await loki.reader(TENANT).count('{source=~"eventlog_objects|pubsub"}', startNs, endNs);
  if (stored !== pass * N)
    throw new Error(`Loki holds ${stored} entries by count_over_time; pushed ${pass * N}`);
  const summary = (shape: Shape) => {
    const rs = results[shape];
    const entries = rs.reduce((n, r) => n + r.entries, 0);
    const perMillion = (ms: number): number => Math.round((ms / entries) * 1e6) / 1000;
    return {
      eps_median: median(rs.map((r) => r.eps)),
      ratio_vs_one_stream: median(rs.map((r, k) => r.eps / results.one[k]!.eps)),
      requests_per_1000_entries:
        Math.round((rs.reduce((n, r) => n + r.requests, 0) / entries) * 100_000) / 100,
      sender_cpu_s_per_million: perMillion(rs.reduce((n, r) => n + r.sender_cpu_ms, 0)),
      loki_cpu_s_per_million: perMillion(rs.reduce((n, r) => n + (r.receiver_cpu_ms ?? 0), 0)),
    };
  };
  console.log(
    JSON.stringify({
      bench: "streams_per_request_real_loki",
      loki: "3.4.6",
      entries_per_pass: N,
      samples: SAMPLES,
      stored_by_count_over_time: stored,
      one_stream: summary("one"),
      three_streams: summary("three"),
      twenty_streams: summary("twenty"),
    }),
  );
} finally {
  await loki.stop();
}

// End-to-end pipeline throughput (spec B §7 part 2): a flooding bulk source, the real pipeline, a
// no-op sink and an in-memory store. Reports entries/s next to a reference on the same input (the
// bare source drained with no pipeline), so the figure reads as a ratio, not a bare time.
//   node bench/pipeline-noop.ts            → JSON on stdout
import { fileURLToPath } from "node:url";
import type { Meter } from "@opentelemetry/api";
import { LogEntry, msToNs } from "../src/model.ts";
import { createMetrics } from "../src/obs/metrics.ts";
import { orgMeter } from "../src/obs/org-meter.ts";
import { Pipeline } from "../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS, type BatchSettings } from "../src/pipeline/settings.ts";
import type { PushResult, Sink } from "../src/sinks/sink.ts";
import { eachEntry, type Source } from "../src/sources/source.ts";
import type { CheckpointStore } from "../src/state/store.ts";
import { SOURCE_RUN } from "./codec.ts";

/** The §7 settings: 1000-entry / 4 MB batches, 1 s interval, 10 000 entries / 256 MiB per lane. */
const BENCH_SETTINGS: BatchSettings = {
  ...DEFAULT_BATCH_SETTINGS,
  max_entries: 1000,
  max_bytes: 4_000_000,
  flush_interval_ms: 1000,
  queue_maxsize: 10_000,
  queue_max_bytes: 256 * 1024 * 1024,
};

const NOTHING_DROPPED: PushResult = { dropped: [] };
const noopSink: Sink = {
  push: () => Promise.resolve(NOTHING_DROPPED),
  close: () => Promise.resolve(),
};

function memoryStore(): CheckpointStore & { writes: number } {
  const doc = new Map<string, string>();
  return {
    location: "memory://bench",
    writes: 0,
    load: (key) => Promise.resolve(doc.get(key)),
    commit(key, value) {
      return this.commitMany({ [key]: value });
    },
    commitMany(items) {
      this.writes++;
      for (const key in items) doc.set(key, items[key]!);
      return Promise.resolve();
    },
    replace(items) {
      doc.clear();
      return this.commitMany(items);
    },
    delete: (key) => Promise.resolve(void doc.delete(key)),
    snapshot: () => Promise.resolve(Object.fromEntries(doc)),
    reset: () => undefined,
    setFence: () => undefined,
    claimTerm: () => Promise.resolve(),
    readFenceEpoch: () => Promise.resolve(undefined),
    close: () => Promise.resolve(),
  };
}

function floodSource(entries: readonly LogEntry[]): Source {
  return {
    name: "eventlog_objects",
    // eslint-disable-next-line @typescript-eslint/require-await -- a flooding source never waits
    async *events() {
      for (let i = 0; i < entries.length; i += SOURCE_RUN) yield entries.slice(i, i + SOURCE_RUN);
    },
  };
}

/** The reference: the same source drained with nothing behind it. */
async function drain(entries: readonly LogEntry[]): Promise<number> {
  let n = 0;
  const reader = { load: () => Promise.resolve(undefined) };
  for await (const _ of eachEntry(floodSource(entries).events(reader, new AbortController().signal))) n++;
  return n;
}

export interface BenchResult {
  entries: number;
  ms: number;
  eps: number;
  /** The same source drained with no pipeline: the ceiling the pipeline is measured against. */
  source_only_eps: number;
  /** eps / source_only_eps. */
  ratio: number;
  store_writes: number;
}

/** `meter` defaults to the global one (a no-op unless an SDK provider was registered). */
export async function benchPipelineNoop(
  entries: LogEntry[],
  settings: Partial<BatchSettings> = {},
  opts: { meter?: Meter } = {},
): Promise<BenchResult> {
  // Untimed first pass: the freshly built corpus is promoted by the GC here, not in a measured run.
  await drain(entries);
  const t0 = performance.now();
  const n = await drain(entries);
  const sourceOnlyMs = performance.now() - t0;

  const pass = await pipelineNoopPass(entries, settings, opts);
  const sourceOnlyEps = Math.round(n / (sourceOnlyMs / 1000));
  return {
    entries: entries.length,
    ms: Math.round(pass.ms),
    eps: pass.eps,
    source_only_eps: sourceOnlyEps,
    ratio: Math.round((pass.eps / sourceOnlyEps) * 100) / 100,
    store_writes: pass.store_writes,
  };
}

/** One timed run of the Pipeline over `entries` into the no-op sink (no source-only reference). */
export async function pipelineNoopPass(
  entries: readonly LogEntry[],
  settings: Partial<BatchSettings> = {},
  opts: { meter?: Meter } = {},
): Promise<{ ms: number; eps: number; store_writes: number }> {
  const store = memoryStore();
  const pipeline = new Pipeline({
    sources: [floodSource(entries)],
    sink: noopSink,
    store,
    batch: { ...BENCH_SETTINGS, ...settings },
    ...(opts.meter ? { meter: opts.meter } : {}),
  });
  const t0 = performance.now();
  await pipeline.run(new AbortController().signal);
  const ms = performance.now() - t0;
  return { ms, eps: Math.round(entries.length / (ms / 1000)), store_writes: store.writes };
}

/** The §7 corpus: ~280-byte JSON lines, two labels, two metadata fields, one polling key. */
export function benchCorpus(count = 200_000): LogEntry[] {
  const base = Date.UTC(2026, 0, 1);
  const out: LogEntry[] = [];
  for (let i = 0; i < count; i++) {
    const at = new Date(base + i).toISOString();
    const line = JSON.stringify({
      EventDate: at,
      EventIdentifier: `0a1b2c3d-${String(i).padStart(8, "0")}-4e5f-8a9b-0c1d2e3f4a5b`,
      UserId: "005xx000001SvBaAAK",
      Username: "integration.user@example.com",
      SourceIp: "203.0.113.42",
      Method: "GET",
      Uri: "/services/data/v62.0/query",
      RowsProcessed: i % 500,
      Client: "sf",
    });
    out.push(
      new LogEntry({
        timestampNs: msToNs(base + i),
        labels: { source: "eventlog_objects", event_type: "ApiEvent" },
        line,
        structuredMetadata: { user_id: "005xx000001SvBaAAK", session_key: `sess-${i % 97}` },
        checkpoint: {
          key: "eventlog_objects:ApiEvent",
          value: `{"ids":["0AT${String(i).padStart(12, "0")}"],"last_ts":"${at}"}`,
        },
      }),
    );
  }
  return out;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const lineBytes = benchCorpus(1000).reduce((sum, e) => sum + e.lineBytes, 0) / 1000;
  await benchPipelineNoop(benchCorpus(20_000)); // warm-up
  const result = await benchPipelineNoop(benchCorpus());
  // What the daemon pays for its instruments: its own registry (createMetrics), and the org-stamped
  // view of it that each shard of a sharded daemon records through.
  const metrics = createMetrics({ version: "bench" });
  const withMetrics = await benchPipelineNoop(benchCorpus(), {}, { meter: metrics.meter });
  const withShardMetrics = await benchPipelineNoop(
    benchCorpus(),
    {},
    { meter: orgMeter(metrics.meter, "acme") },
  );
  await metrics.shutdown();
  const report = {
    bench: "pipeline-noop",
    avg_line_bytes: Math.round(lineBytes),
    ...result,
    eps_with_daemon_metrics: withMetrics.eps,
    eps_with_shard_metrics: withShardMetrics.eps,
  };
  process.stdout.write(JSON.stringify(report) + "\n");
}

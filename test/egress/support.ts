// A pipeline pushing through the egress governor into the real Loki sink and receiver, with a manual
// clock and a real OTel metrics pipeline. Not a test file: shared by the egress tests.
import type { TestContext } from "node:test";
import { createApp, type App } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { pino } from "pino";
import { GovernedSink, type EgressSettings } from "../../src/egress/governed-sink.ts";
import { LogEntry, type Batch } from "../../src/model.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS, type BatchSettings } from "../../src/pipeline/settings.ts";
import { startLokiReceiver, type LokiReceiver } from "../../src/sim/loki.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import type { PushResult, Sink } from "../../src/sinks/sink.ts";
import type { Source } from "../../src/sources/source.ts";
import type { ManualClock } from "../../src/util/clock.ts";
import { settings, TestMetrics } from "../sinks/loki/support.ts";
import { MemoryStore } from "../support/fakes.ts";

export const OFF: EgressSettings = {
  max_lines_per_second: 0,
  max_bytes_per_second: 0,
  daily_byte_budget: 0,
  budget_action: "pause",
};

/** Records, for every push the governor let through, the clock's monotonic ms and its line bytes. */
export class AdmissionLog implements Sink {
  readonly admitted: { atMono: number; bytes: number; lines: number }[] = [];
  readonly #inner: Sink;
  readonly #clock: ManualClock;

  constructor(inner: Sink, clock: ManualClock) {
    this.#inner = inner;
    this.#clock = clock;
  }

  push(batch: Batch, signal?: AbortSignal): Promise<PushResult> {
    let bytes = 0;
    for (const e of batch) bytes += e.lineBytes;
    this.admitted.push({ atMono: this.#clock.monotonic(), bytes, lines: batch.length });
    return this.#inner.push(batch, signal);
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

export interface GovernedRun {
  receiver: LokiReceiver;
  governor: GovernedSink;
  admissions: AdmissionLog;
  pipeline: Pipeline;
  store: MemoryStore;
  metrics: TestMetrics;
  logs: { msg: string; level: number }[];
}

export async function governedRun(
  t: TestContext,
  opts: {
    clock: ManualClock;
    sources: Source[];
    egress: Partial<EgressSettings>;
    store?: MemoryStore;
    batch?: Partial<BatchSettings>;
  },
): Promise<GovernedRun> {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const metrics = new TestMetrics();
  const logs: { msg: string; level: number }[] = [];
  const logger = pino({ level: "info" }, { write: (l: string) => logs.push(JSON.parse(l) as never) });
  const loki = createLokiSink(settings(receiver.pushUrl), { clock: opts.clock, meter: metrics.meter });
  const admissions = new AdmissionLog(loki, opts.clock);
  const governor = new GovernedSink(
    admissions,
    { ...OFF, ...opts.egress },
    { clock: opts.clock, logger, meter: metrics.meter },
  );
  t.after(() => governor.close());
  const store = opts.store ?? new MemoryStore();
  await governor.startTerm(store);
  const pipeline = new Pipeline({
    sources: opts.sources,
    sink: governor,
    store: governor.bind(store),
    batch: { ...DEFAULT_BATCH_SETTINGS, flush_interval_ms: 250, ...opts.batch },
    shutdown_grace_ms: 5_000,
    clock: opts.clock,
    logger,
    meter: metrics.meter,
  });
  return { receiver, governor, admissions, pipeline, store, metrics, logs };
}

// The clocks of the tests pushing these are on 2026-12-01: within Loki's (and the sink's) age limit.
let ts = 1_796_083_200_000_000_000n; // 2026-12-01T00:00:00Z

/** A bulk-lane entry whose line is exactly `bytes` long; checkpoint values are zero-padded. */
export function sized(key: string, n: number, bytes: number, source = "eventlog_objects"): LogEntry {
  const head = `{"n":${String(n)},"pad":"`;
  const line = head + "x".repeat(Math.max(0, bytes - head.length - 2)) + '"}';
  return new LogEntry({
    timestampNs: ts++,
    labels: { source, event_type: "ApiEvent" },
    line,
    checkpoint: { key, value: String(n).padStart(6, "0") },
  });
}

/** A daemon on `tree` with its health server on a loopback port, stopped (and awaited) after the test. */
export function startDaemon(t: TestContext, tree: unknown): App {
  const stop = new AbortController();
  const app = createApp(validateConfig(tree), { healthAddr: "127.0.0.1:0" });
  const running = app.run(stop.signal);
  t.after(() => {
    stop.abort();
    return running;
  });
  return app;
}

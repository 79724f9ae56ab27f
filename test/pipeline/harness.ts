// Builds a Pipeline wired to the fakes, a manual clock and a real OTel MeterProvider, and reads
// metrics back. Not a test file: shared by the pipeline tests.
import type { Attributes } from "@opentelemetry/api";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import { pino } from "pino";
import type { DeadLetterSink } from "../../src/pipeline/dead-letters.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS, type BatchSettings } from "../../src/pipeline/settings.ts";
import type { Labels } from "../../src/model.ts";
import type { Source } from "../../src/sources/source.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { ChannelSource, FakeSink, MemoryStore } from "../support/fakes.ts";

class TestReader extends MetricReader {
  protected onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
  protected onShutdown(): Promise<void> {
    return Promise.resolve();
  }
}

export interface LogRecord {
  level: number;
  msg: string;
  [k: string]: unknown;
}

export interface Harness {
  pipeline: Pipeline;
  clock: ManualClock;
  store: MemoryStore;
  sink: FakeSink;
  logs: LogRecord[];
  /** Sum of a counter's (or histogram's count) data points whose attributes include `attrs`. */
  metric(name: string, attrs?: Attributes): Promise<number>;
  points(name: string): Promise<DataPoint<unknown>[]>;
}

export interface HarnessOptions {
  batch?: Partial<BatchSettings>;
  graceMs?: number;
  staticLabels?: Labels;
  store?: MemoryStore;
  sink?: FakeSink;
  clock?: ManualClock;
  deadLetters?: DeadLetterSink;
}

export function harness(sources: Source[], opts: HarnessOptions = {}): Harness {
  const clock = opts.clock ?? new ManualClock({ auto: false });
  const store = opts.store ?? new MemoryStore();
  const sink = opts.sink ?? new FakeSink();
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  const logs: LogRecord[] = [];
  const logger = pino(
    { level: "debug" },
    { write: (line: string) => logs.push(JSON.parse(line) as LogRecord) },
  );
  const pipeline = new Pipeline({
    sources,
    sink,
    store,
    // A flush interval no retry delay equals, so clock.sleeps tells them apart.
    batch: { ...DEFAULT_BATCH_SETTINGS, flush_interval_ms: 250, ...opts.batch },
    shutdown_grace_ms: opts.graceMs ?? 25_000,
    clock,
    logger,
    meter: provider.getMeter("test"),
    staticLabels: opts.staticLabels ?? {},
    ...(opts.deadLetters ? { deadLetters: opts.deadLetters } : {}),
  });
  const points = async (name: string): Promise<DataPoint<unknown>[]> => {
    const { resourceMetrics } = await reader.collect();
    const found = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((m) => m.descriptor.name === name);
    return found?.dataPoints ?? [];
  };
  const metric = async (name: string, attrs: Attributes = {}): Promise<number> => {
    let total = 0;
    for (const p of await points(name)) {
      if (!Object.entries(attrs).every(([k, v]) => p.attributes[k] === v)) continue;
      const v = p.value;
      total += typeof v === "number" ? v : (v as { count: number }).count;
    }
    return total;
  };
  return { pipeline, clock, store, sink, logs, metric, points };
}

export interface StalledRun extends Harness {
  src: ChannelSource;
  stop: AbortController;
  running: Promise<void>;
  done(): boolean;
}

/** A streaming source the test feeds, a stalled sink, and a run already started. */
export function stalledStream(opts: HarnessOptions = {}): StalledRun {
  const src = new ChannelSource("pubsub");
  const h = harness([src], opts);
  h.sink.stall();
  const stop = new AbortController();
  let done = false;
  const running = h.pipeline.run(stop.signal).finally(() => {
    done = true;
  });
  return { ...h, src, stop, running, done: () => done };
}

/** Checkpoint values of one key must never go backwards across commits (zero-padded values). */
export function isMonotonic(values: readonly string[]): boolean {
  return values.every((v, i) => i === 0 || values[i - 1]! <= v);
}

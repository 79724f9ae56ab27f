// Shared fixtures for the Loki sink tests: entries, a real metrics pipeline, a sink on a receiver.
import type { TestContext } from "node:test";
import { MeterProvider, MetricReader, type DataPoint } from "@opentelemetry/sdk-metrics";
import type { Meter } from "@opentelemetry/api";
import { LogEntry, type Labels } from "../../../src/model.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { createLokiSink, type LokiSink } from "../../../src/sinks/loki/sink.ts";
import type { LokiSinkSettings } from "../../../src/sinks/loki/settings.ts";
import { startLokiReceiver, type LokiReceiver, type LokiReceiverOptions } from "../../../src/sim/loki.ts";

export const T0_NS = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z

export function entry(
  i: number,
  over: { line?: string; labels?: Labels; ts?: bigint; meta?: Labels } = {},
): LogEntry {
  return new LogEntry({
    timestampNs: over.ts ?? T0_NS + BigInt(i) * 1_000_123n,
    labels: over.labels ?? { source: "pubsub", event_type: "LoginEventStream" },
    line: over.line ?? `{"EventIdentifier":"ev-${i}","n":${i}}`,
    structuredMetadata: over.meta ?? { level: "info", user_id: `005${i}` },
    checkpoint: { key: "pubsub:/event/LoginEventStream", value: String(i) },
  });
}

export function entries(n: number, from = 0): LogEntry[] {
  return Array.from({ length: n }, (_, i) => entry(from + i));
}

class CollectingReader extends MetricReader {
  protected override async onShutdown(): Promise<void> {}
  protected override async onForceFlush(): Promise<void> {}
}

/** A real SDK pipeline so tests read what an exporter would see. */
export class TestMetrics {
  readonly #reader = new CollectingReader();
  readonly meter: Meter;

  constructor() {
    this.meter = new MeterProvider({ readers: [this.#reader] }).getMeter("test");
  }

  /** Sum of a counter's data points whose attributes include `attrs`. */
  async sum(name: string, attrs: Record<string, string> = {}): Promise<number> {
    const { resourceMetrics } = await this.#reader.collect();
    let total = 0;
    for (const scope of resourceMetrics.scopeMetrics) {
      for (const metric of scope.metrics) {
        if (metric.descriptor.name !== name) continue;
        for (const dp of metric.dataPoints as DataPoint<number>[]) {
          if (Object.entries(attrs).every(([k, v]) => dp.attributes[k] === v)) total += dp.value;
        }
      }
    }
    return total;
  }
}

export function settings(url: string, over: Partial<LokiSinkSettings> = {}): LokiSinkSettings {
  return {
    url,
    encoding: "protobuf",
    compression: "snappy",
    labels: {},
    batch: { max_line_bytes: 262_144 },
    ...over,
  };
}

export interface Harness {
  receiver: LokiReceiver;
  sink: LokiSink;
  clock: ManualClock;
  metrics: TestMetrics;
}

/** A receiver and a sink pointed at it, both closed when the test ends. */
export async function harness(
  t: TestContext,
  over: Partial<LokiSinkSettings> = {},
  receiverOpts: LokiReceiverOptions = {},
): Promise<Harness> {
  const receiver = await startLokiReceiver(receiverOpts);
  t.after(() => receiver.stop());
  const clock = new ManualClock();
  const metrics = new TestMetrics();
  const sink = createLokiSink(settings(receiver.pushUrl, over), { clock, meter: metrics.meter });
  t.after(() => sink.close());
  return { receiver, sink, clock, metrics };
}

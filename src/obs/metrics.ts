// One OpenTelemetry meter feeds both the Prometheus text served on /metrics and the optional OTLP/HTTP
// push, sent as protobuf like the Python version's (`otlp.proto.http`) with `service.name` and
// `service.version` on the resource. Version lives on sf2loki_build_info only, never on every
// series (#82).
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Meter } from "@opentelemetry/api";
import { MeterProvider, PeriodicExportingMetricReader, type MetricReader } from "@opentelemetry/sdk-metrics";
import { PrometheusExporter } from "@opentelemetry/exporter-prometheus";
import { resourceFromAttributes } from "@opentelemetry/resources";
import { LazyOtlpExporter } from "./lazy-otlp.ts";
import { attachHistogramFactory } from "./hot-path-histogram.ts";
import { LocalHistograms } from "./local-histograms.ts";

export interface TelemetrySettings {
  enabled: boolean;
  endpoint: string;
  headers: Record<string, string>;
  export_interval: number;
  resource_attributes: Record<string, string>;
}

export interface Metrics {
  meter: Meter;
  /** Serves the Prometheus text exposition format. */
  handlePrometheus: (req: IncomingMessage, res: ServerResponse) => void;
  shutdown: () => Promise<void>;
}

export function createMetrics(opts: {
  version: string;
  telemetry?: TelemetrySettings;
  otlpHeaders?: Record<string, string>;
}): Metrics {
  // Per-entry histograms aggregate outside the SDK (src/obs/local-histograms.ts); every reader
  // exports them beside the SDK's own instruments.
  const local = new LocalHistograms();
  const prometheus = new PrometheusExporter({
    preventServerStart: true,
    withoutScopeInfo: true,
    metricProducers: [local],
  });
  const readers: MetricReader[] = [prometheus];
  const t = opts.telemetry;
  if (t?.enabled) {
    readers.push(
      new PeriodicExportingMetricReader({
        exporter: new LazyOtlpExporter(t.endpoint, { ...opts.otlpHeaders, ...t.headers }),
        exportIntervalMillis: t.export_interval,
        metricProducers: [local],
      }),
    );
  }
  const provider = new MeterProvider({
    resource: resourceFromAttributes({
      "service.name": "sf2loki",
      "service.version": opts.version,
      ...(t?.resource_attributes ?? {}),
    }),
    readers,
  });
  const meter = provider.getMeter("sf2loki");
  attachHistogramFactory(meter, local);
  const buildInfo = meter.createObservableGauge("sf2loki_build_info", {
    description: "Always 1; carries the version.",
  });
  buildInfo.addCallback((r) => {
    r.observe(1, { version: opts.version });
  });
  return {
    meter,
    handlePrometheus: (req, res) => {
      prometheus.getMetricsRequestHandler(req, res);
    },
    shutdown: () => provider.shutdown({ timeoutMillis: 5000 }),
  };
}

/**
 * A gauge that keeps exporting its last value for every attribute set ever written (#90): an
 * observable gauge over a map, so idle state (leader, last push) never vanishes from Prometheus.
 */
export class StateGauge {
  readonly #values = new Map<string, { attrs: Record<string, string>; value: number }>();

  constructor(meter: Meter, name: string, description: string) {
    meter.createObservableGauge(name, { description }).addCallback((r) => {
      for (const { attrs, value } of this.#values.values()) r.observe(value, attrs);
    });
  }

  set(value: number, attrs: Record<string, string> = {}): void {
    const key = JSON.stringify(Object.entries(attrs).sort());
    this.#values.set(key, { attrs, value });
  }
}

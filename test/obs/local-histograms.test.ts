import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type { Attributes } from "@opentelemetry/api";
import { PrometheusExporter, PrometheusSerializer } from "@opentelemetry/exporter-prometheus";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import { hotPathHistogram } from "../../src/obs/hot-path-histogram.ts";
import { LocalHistograms } from "../../src/obs/local-histograms.ts";
import { createMetrics, type Metrics } from "../../src/obs/metrics.ts";
import { orgMeter } from "../../src/obs/org-meter.ts";
import { seededRandom } from "../../src/util/prng.ts";

const BOUNDARIES = [1, 5, 15, 60, 300, 900, 1800, 3600, 7200, 14400, 28800, 86400];
const OPTIONS = {
  description: "Now minus the entry timestamp at ingest.",
  unit: "s",
  boundaries: BOUNDARIES,
};

/** A sample line with its labels in name order (`le` last): Prometheus reads label sets unordered. */
function canonical(line: string): string {
  const m = /^([^{]+)\{(.*)\} (.*)$/.exec(line);
  if (!m) return line;
  const pairs = m[2]!.split(/,(?=[a-z_]+=")/);
  const le = pairs.filter((p) => p.startsWith("le="));
  return `${m[1]}{${[...pairs.filter((p) => !p.startsWith("le=")).sort(), ...le].join(",")}} ${m[3]}`;
}

/** The Prometheus text of what `exporter` collects, without timestamps. */
async function scrape(exporter: PrometheusExporter): Promise<string[]> {
  const { resourceMetrics } = await exporter.collect();
  return new PrometheusSerializer(undefined, false, undefined, true, true)
    .serialize(resourceMetrics)
    .split("\n")
    .filter((l) => l.startsWith("lag_"))
    .map(canonical)
    .sort();
}

describe("local histograms", () => {
  it("export exactly what the SDK's explicit-bucket histogram exports for the same records", async () => {
    const sdkExporter = new PrometheusExporter({ preventServerStart: true, withoutScopeInfo: true });
    const sdk = new MeterProvider({ readers: [sdkExporter] })
      .getMeter("sf2loki")
      .createHistogram("lag_seconds", {
        description: OPTIONS.description,
        unit: "s",
        advice: { explicitBucketBoundaries: BOUNDARIES },
      });
    const local = new LocalHistograms();
    const localExporter = new PrometheusExporter({
      preventServerStart: true,
      withoutScopeInfo: true,
      metricProducers: [local],
    });
    new MeterProvider({ readers: [localExporter] });
    const ours = local.create("lag_seconds", OPTIONS);

    // Three series; one object reused per series (the hot path), fresh equal objects, other key orders.
    const slots: Attributes[] = [
      { source: "eventlogfile", event_type: "API" },
      { source: "pubsub", event_type: "LoginEventStream", org: "eu" },
      { source: "pubsub", event_type: "LoginEventStream" },
    ];
    const random = seededRandom(7);
    for (let i = 0; i < 20_000; i++) {
      const slot = slots[i % 3]!;
      const attrs = i % 5 === 0 ? Object.fromEntries(Object.entries(slot).reverse()) : slot;
      // Exactly on boundaries, just around them, negative (clock skew), huge, fractional.
      const pick = random();
      const value =
        pick < 0.2
          ? BOUNDARIES[Math.floor(random() * BOUNDARIES.length)]!
          : pick < 0.3
            ? -random() * 10
            : pick < 0.35
              ? 1e6 * random()
              : random() * 20_000;
      sdk.record(value, attrs);
      ours.record(value, attrs);
    }
    ours.record(Number.NaN, slots[0]);
    sdk.record(Number.NaN, slots[0]);

    const want = await scrape(sdkExporter);
    const got = await scrape(localExporter);
    assert.ok(want.length >= 3 * (BOUNDARIES.length + 3), `the SDK exported ${want.length} lines`);
    assert.deepEqual(got, want);
  });

  it("is what the daemon's registry hands a hot path, and /metrics shows it", async () => {
    const metrics = createMetrics({ version: "test" });
    const lag = hotPathHistogram(metrics.meter, "sf2loki_ingest_lag_seconds", OPTIONS);
    const attrs = { source: "eventlogfile", event_type: "API" };
    for (const v of [0.5, 1, 2, 400]) lag.record(v, attrs);
    const body = await prometheusText(metrics);
    await metrics.shutdown();
    assert.match(body, /^# TYPE sf2loki_ingest_lag_seconds histogram$/m);
    assert.match(
      body,
      /^sf2loki_ingest_lag_seconds_bucket\{source="eventlogfile",event_type="API",le="1"\} 2$/m,
    );
    assert.match(
      body,
      /^sf2loki_ingest_lag_seconds_bucket\{source="eventlogfile",event_type="API",le="300"\} 3$/m,
    );
    assert.match(body, /^sf2loki_ingest_lag_seconds_count\{source="eventlogfile",event_type="API"\} 4$/m);
    assert.match(body, /^sf2loki_ingest_lag_seconds_sum\{source="eventlogfile",event_type="API"\} 403.5$/m);
  });

  it("is what a shard's org-stamped meter hands a hot path too, every series carrying org", async () => {
    const metrics = createMetrics({ version: "test" });
    // A sharded daemon gives each shard's pipeline orgMeter(daemon meter): its per-entry histogram
    // must stay the local one, not the SDK's (which hashes every record's attributes).
    const sdkHistograms: string[] = [];
    const createHistogram = metrics.meter.createHistogram.bind(metrics.meter);
    metrics.meter.createHistogram = (name, opts) => {
      sdkHistograms.push(name);
      return createHistogram(name, opts);
    };
    const lag = hotPathHistogram(orgMeter(metrics.meter, "acme"), "sf2loki_ingest_lag_seconds", OPTIONS);
    assert.deepEqual(sdkHistograms, []);
    const attrs = { source: "pubsub", event_type: "X", org: "not-this-one" };
    for (const v of [0.5, 2, 2]) lag.record(v, attrs);
    lag.record(7);
    const body = await prometheusText(metrics);
    await metrics.shutdown();
    assert.match(body, /^sf2loki_ingest_lag_seconds_count\{source="pubsub",event_type="X",org="acme"\} 3$/m);
    assert.match(body, /^sf2loki_ingest_lag_seconds_sum\{source="pubsub",event_type="X",org="acme"\} 4.5$/m);
    assert.match(body, /^sf2loki_ingest_lag_seconds_count\{org="acme"\} 1$/m);
    assert.doesNotMatch(body, /not-this-one/);
  });

  it("falls back to the SDK's histogram on a meter that is not the daemon's", () => {
    const meter = new MeterProvider().getMeter("t");
    const h = hotPathHistogram(meter, "x", OPTIONS);
    assert.equal(h.constructor.name === "LocalHistogram", false);
  });
});

/** What /metrics serves, through the registry's own handler. */
function prometheusText(metrics: Metrics): Promise<string> {
  return new Promise<string>((resolve) => {
    let text = "";
    const res = {
      statusCode: 0,
      setHeader: () => undefined,
      writeHead: () => res,
      write: (chunk: string) => {
        text += chunk;
      },
      end: (chunk?: string) => {
        resolve(text + (chunk ?? ""));
      },
    };
    metrics.handlePrometheus({ url: "/metrics", headers: {} } as never, res as never);
  });
}

import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
  type GaugeMetricData,
} from "@opentelemetry/sdk-metrics";
import { staticAccessTokens } from "../../src/salesforce/access-token.ts";
import { LimitsPoller, parseLimits } from "../../src/salesforce/limits.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import { startSimRest } from "../../src/sim/salesforce-rest/index.ts";
import { ManualClock } from "../../src/util/clock.ts";

describe("LimitsPoller", () => {
  it("keeps integer Max/Remaining pairs only", () => {
    const parsed = parseLimits({
      DailyApiRequests: { Max: 15000, Remaining: 14000 },
      Odd: { Max: "15000", Remaining: 1 },
      Float: { Max: 1.5, Remaining: 1 },
      Flat: 7,
    });
    assert.deepEqual([...parsed], [["DailyApiRequests", { max: 15000, remaining: 14000 }]]);
  });

  it("exports the last polled values as gauges, also after a failed poll, and counts the failure", async (t) => {
    const clock = new ManualClock();
    const sim = await startSimRest({ clock });
    const rest = new RestClient({ tokens: staticAccessTokens(sim.instanceUrl), apiVersion: "60.0", clock });
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 3_600_000 });
    const provider = new MeterProvider({ readers: [reader] });
    t.after(async () => {
      await provider.shutdown();
      await rest.close();
      await sim.stop();
    });
    const poller = new LimitsPoller({ rest, clock, meter: provider.getMeter("test") });
    assert.equal(await poller.pollOnce(), true);
    sim.faults.add({ route: "limits", kind: "html", times: 1 });
    assert.equal(await poller.pollOnce(), false);

    const { resourceMetrics } = await reader.collect();
    const all = resourceMetrics.scopeMetrics.flatMap((s) => s.metrics);
    const remaining = all.find(
      (m) => m.descriptor.name === "sf2loki_salesforce_limit_remaining",
    ) as GaugeMetricData;
    const daily = remaining.dataPoints.find((p) => p.attributes.limit_name === "DailyApiRequests");
    assert.equal(daily?.value, 14876);
    const errors = all.find((m) => m.descriptor.name === "sf2loki_salesforce_limits_poll_errors");
    assert.equal(errors?.dataPoints[0]?.value, 1);
  });

  it("polls at once and then every interval until stopped", async (t) => {
    const clock = new ManualClock();
    const sim = await startSimRest({ clock });
    const rest = new RestClient({ tokens: staticAccessTokens(sim.instanceUrl), apiVersion: "60.0", clock });
    t.after(async () => {
      await rest.close();
      await sim.stop();
    });
    const stop = new AbortController();
    const poller = new LimitsPoller({ rest, clock, pollIntervalMs: 300_000 });
    const origSleep = clock.sleep.bind(clock);
    clock.sleep = (ms, signal) => {
      if (clock.now() >= Date.UTC(2026, 0, 1, 0, 20)) stop.abort();
      return origSleep(ms, signal);
    };
    await poller.run(stop.signal);
    assert.equal(sim.stats.requests, 5);
  });
});

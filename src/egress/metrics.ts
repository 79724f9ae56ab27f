// The governor's instruments, under the Python version's names where it had them. The gauges are
// observed live at every collection, so they export (at 0) from start-up and never go stale. One set
// of instruments per meter serves every Loki destination: the top-level one's series carry no extra
// attribute (as in the Python version), an org's own destination's carry `destination` (#123).
import type { Attributes, Histogram, Meter } from "@opentelemetry/api";

/** Waits from a few ms (one batch queued behind another) to minutes (a cap far below the inflow). */
const WAIT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export interface EgressReadings {
  budgetUsedBytes(): number;
  paused(): boolean;
}

export class EgressMetrics {
  readonly rateLimitedWait: Histogram;
  readonly #readings: { read: EgressReadings; attributes: Attributes }[] = [];

  constructor(meter: Meter, read?: EgressReadings) {
    meter
      .createObservableGauge("sf2loki_egress_budget_used_bytes", {
        description: "Line bytes counted against sink.loki.egress.daily_byte_budget this UTC day.",
        unit: "By",
      })
      .addCallback((r) => {
        for (const { read, attributes } of this.#readings) r.observe(read.budgetUsedBytes(), attributes);
      });
    meter
      .createObservableGauge("sf2loki_egress_paused", {
        description:
          "1 while pushes are held because the daily egress budget is spent (budget_action: pause).",
      })
      .addCallback((r) => {
        for (const { read, attributes } of this.#readings) r.observe(read.paused() ? 1 : 0, attributes);
      });
    this.rateLimitedWait = meter.createHistogram("sf2loki_egress_rate_limited_wait_seconds", {
      description: "How long each push waited for the egress rate caps (0 when it did not wait).",
      unit: "s",
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    });
    if (read) this.add(read);
  }

  /** One destination's readings, observed under `attributes` ({} for the top-level destination). */
  add(read: EgressReadings, attributes: Attributes = {}): void {
    this.#readings.push({ read, attributes });
  }
}

/** No limit configured on a destination: its series at 0, so dashboards and alerts never go silent. */
export const IDLE_EGRESS: EgressReadings = { budgetUsedBytes: () => 0, paused: () => false };

/** With no egress limit configured: the same series at 0, so dashboards and alerts never go silent. */
export function idleEgressMetrics(meter: Meter): void {
  new EgressMetrics(meter, IDLE_EGRESS);
}

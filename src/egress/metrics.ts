// The governor's instruments, under the Python version's names where it had them. The gauges are
// observed live at every collection, so they export (at 0) from start-up and never go stale.
import type { Histogram, Meter } from "@opentelemetry/api";

/** Waits from a few ms (one batch queued behind another) to minutes (a cap far below the inflow). */
const WAIT_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

export interface EgressReadings {
  budgetUsedBytes(): number;
  paused(): boolean;
}

export class EgressMetrics {
  readonly rateLimitedWait: Histogram;

  constructor(meter: Meter, read: EgressReadings) {
    meter
      .createObservableGauge("sf2loki_egress_budget_used_bytes", {
        description: "Line bytes counted against sink.loki.egress.daily_byte_budget this UTC day.",
        unit: "By",
      })
      .addCallback((r) => {
        r.observe(read.budgetUsedBytes());
      });
    meter
      .createObservableGauge("sf2loki_egress_paused", {
        description:
          "1 while pushes are held because the daily egress budget is spent (budget_action: pause).",
      })
      .addCallback((r) => {
        r.observe(read.paused() ? 1 : 0);
      });
    this.rateLimitedWait = meter.createHistogram("sf2loki_egress_rate_limited_wait_seconds", {
      description: "How long each push waited for the egress rate caps (0 when it did not wait).",
      unit: "s",
      advice: { explicitBucketBoundaries: WAIT_BUCKETS },
    });
  }
}

/** With no egress limit configured: the same series at 0, so dashboards and alerts never go silent. */
export function idleEgressMetrics(meter: Meter): void {
  new EgressMetrics(meter, { budgetUsedBytes: () => 0, paused: () => false });
}

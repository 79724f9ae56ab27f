// The dead-letter series (docs/metrics.md). Counters are exported at 0 from start-up so the
// "dead letters growing" alert has a series to evaluate on a healthy daemon; evictions and write
// failures carry no label, so that one series is all an alert's increase() ever needs.
import type { Counter, Meter } from "@opentelemetry/api";
import type { DeadLetterUsage } from "./types.ts";

export class DeadLetterMetrics {
  readonly written: Counter;
  readonly evicted: Counter;
  readonly writeFailures: Counter;

  constructor(meter: Meter, usage: () => DeadLetterUsage | undefined) {
    this.written = meter.createCounter("sf2loki_deadletter_entries", {
      description: "Entries Loki refused for good that were kept in the dead-letter store, by reason.",
    });
    this.evicted = meter.createCounter("sf2loki_deadletter_evicted", {
      description:
        "Dead letters removed, oldest first, to keep the store within deadletter.max_bytes/max_entries.",
    });
    this.writeFailures = meter.createCounter("sf2loki_deadletter_write_failures", {
      description:
        "Dead-letter writes given up on after retries (the ERROR log names the entry count; those entries are lost).",
    });
    this.written.add(0);
    this.evicted.add(0);
    this.writeFailures.add(0);
    meter
      .createObservableGauge("sf2loki_deadletter_held_entries", {
        description: "Entries the dead-letter store holds (as of this process's last read or write of it).",
      })
      .addCallback((r) => {
        const u = usage();
        if (u) r.observe(u.entries);
      });
    meter
      .createObservableGauge("sf2loki_deadletter_held_bytes", {
        description: "Bytes the dead-letter store holds (as of this process's last read or write of it).",
        unit: "By",
      })
      .addCallback((r) => {
        const u = usage();
        if (u) r.observe(u.bytes);
      });
  }
}

// The reconcile-on-resume instruments (#27), exported at 0 from start-up so that a dashboard or an
// alert on them has a series on a daemon that never resumed.
import type { Counter, Gauge, Meter } from "@opentelemetry/api";

export class ReconcileMetrics {
  /** Entries left out of a push because Loki already held them, by reason (`resume`, `too_far_behind`). */
  readonly skipped: Counter;
  readonly queries: Counter;
  /** Resumes by outcome (`checked`, `degraded`, `off`) and reason. */
  readonly resumes: Counter;
  readonly seconds: Counter;
  /** Re-read entries dated past Loki's ingester horizon that no lookup could confirm (pushed unchecked). */
  readonly unverified: Counter;
  /** Age of the oldest such entry in the last resume that had any. */
  readonly windowAge: Gauge;
  /** Ingester flushes before looking past the horizon, by outcome (`flushed`, `failed`). */
  readonly flushes: Counter;

  constructor(meter: Meter) {
    this.skipped = meter.createCounter("sf2loki_reconcile_entries_skipped", {
      description:
        "Entries not pushed because Loki already held them: re-read after a resume, or re-sent and refused as too far behind.",
    });
    this.queries = meter.createCounter("sf2loki_reconcile_queries", {
      description: "Loki query_range requests made to look up re-read entries.",
    });
    this.resumes = meter.createCounter("sf2loki_reconcile_resumes", {
      description:
        "Pipeline runs started from checkpoints, by outcome: checked (lookups answered), degraded (pushed unchecked, with the reason), off.",
    });
    this.seconds = meter.createCounter("sf2loki_reconcile_seconds", {
      description: "Time spent waiting on reconcile lookups.",
      unit: "s",
    });
    this.unverified = meter.createCounter("sf2loki_reconcile_entries_unverified", {
      description:
        "Re-read entries dated past Loki's query_ingesters_within, which no lookup could see, pushed unchecked (a LogQL metric query may count a re-sent one twice).",
    });
    this.windowAge = meter.createGauge("sf2loki_reconcile_unverified_age_seconds", {
      description:
        "Age of the oldest re-read entry a resume pushed unchecked because it was dated past Loki's ingester horizon.",
      unit: "s",
    });
    this.flushes = meter.createCounter("sf2loki_reconcile_flushes", {
      description:
        "Ingester flushes (sink.loki.reconcile.flush_url) a resume made before looking past Loki's horizon, by outcome.",
    });
    this.unverified.add(0, { reason: "ingester_horizon" });
    this.skipped.add(0, { reason: "resume" });
    this.skipped.add(0, { reason: "too_far_behind" });
    this.queries.add(0);
    this.seconds.add(0);
  }
}

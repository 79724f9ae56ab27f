// The reconcile-on-resume instruments (#27), exported at 0 from start-up so that a dashboard or an
// alert on them has a series on a daemon that never resumed.
import type { Counter, Meter } from "@opentelemetry/api";

export class ReconcileMetrics {
  /** Entries left out of a push because Loki already held them, by reason (`resume`, `too_far_behind`). */
  readonly skipped: Counter;
  readonly queries: Counter;
  /** Resumes by outcome (`checked`, `degraded`, `off`) and reason. */
  readonly resumes: Counter;
  readonly seconds: Counter;

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
    this.skipped.add(0, { reason: "resume" });
    this.skipped.add(0, { reason: "too_far_behind" });
    this.queries.add(0);
    this.seconds.add(0);
  }
}

// Reconcile on resume (#27). A run starts from checkpoints it did not write: the previous run (this
// process before a restart, another replica before a takeover, another shard owner) may have pushed
// entries past them that it never committed. Re-sent, Loki stores them again, and every LogQL metric
// query counts them twice. So the entries a resumed run re-reads inside the window the previous run
// could have pushed are looked up in Loki first, and those it holds are left out of the push.
//
// The window, per checkpoint key: the first max_uncommitted × max_entries entries after the resume
// (a lane never has more than that pushed and uncommitted), and only entries dated no later than the
// resume plus the clock skew (nothing newer existed while the previous run ran). Past the window,
// nothing is looked up and the steady state makes no query at all.
//
// Lookups never hold delivery hostage: when Loki's read path refuses, fails or times out, or the
// resume's budget of queries and time is spent, the rest is pushed unchecked (at-least-once, as
// before), with one WARN per resume and a metric.
import type { LogEntry } from "../model.ts";
import type { Logger } from "../obs/logger.ts";
import { StoredLookupError, type StoredLookup } from "../sinks/sink.ts";
import type { Clock } from "../util/clock.ts";
import { describeError } from "../errors.ts";
import type { PendingBatch } from "./batch.ts";
import type { ReconcileMetrics } from "./reconcile-metrics.ts";

/** `sink.loki.reconcile`, durations in ms. */
export interface ReconcileSettings {
  enabled: boolean;
  max_queries: number;
  max_duration_ms: number;
  clock_skew_ms: number;
}

export const DEFAULT_RECONCILE: Readonly<ReconcileSettings> = {
  enabled: true,
  max_queries: 2000,
  max_duration_ms: 600_000,
  clock_skew_ms: 300_000,
};

/** ReconcileSettings from `sink.loki.reconcile` (durations already in ms). */
export function reconcileSettingsOf(r: {
  enabled: boolean;
  max_queries: number;
  max_duration: number;
  clock_skew: number;
}): ReconcileSettings {
  return {
    enabled: r.enabled,
    max_queries: r.max_queries,
    max_duration_ms: r.max_duration,
    clock_skew_ms: r.clock_skew,
  };
}

/** One resume of one route, as /statusz shows it. Times are wall-clock epoch ms. */
export interface ResumeReport {
  started_ms: number;
  /** checking: lookups answer; degraded: pushing unchecked (see reason); off: not configured. */
  state: "checking" | "degraded" | "off";
  reason?: string;
  entries_checked: number;
  entries_skipped: number;
  queries: number;
  seconds: number;
}

export interface ReconcilerDeps {
  /** The route's lookup; none (a sink that cannot answer): the resume is off. */
  lookup: StoredLookup | undefined;
  settings: ReconcileSettings;
  /** max_uncommitted × max_entries: what the previous run can have pushed past a key's checkpoint. */
  perKeyBound: number;
  clock: Clock;
  logger: Logger;
  metrics: ReconcileMetrics;
}

export class Reconciler {
  readonly #deps: ReconcilerDeps;
  readonly #report: ResumeReport;
  /** Entries dated later than this cannot have been pushed by the previous run. */
  readonly #newestNs: bigint;
  /** Real entries seen per checkpoint key since the resume, up to the bound. */
  readonly #seen = new Map<string, number>();
  #counted = false;
  #spentMs = 0;

  constructor(deps: ReconcilerDeps) {
    this.#deps = deps;
    const now = deps.clock.now();
    this.#newestNs = BigInt(Math.floor(now + deps.settings.clock_skew_ms)) * 1_000_000n;
    const off = !deps.settings.enabled ? "disabled" : deps.lookup === undefined ? "no_lookup" : undefined;
    this.#report = {
      started_ms: now,
      state: off === undefined ? "checking" : "off",
      ...(off === undefined ? {} : { reason: off }),
      entries_checked: 0,
      entries_skipped: 0,
      queries: 0,
      seconds: 0,
    };
    if (off !== undefined) this.#countResume("off", off);
  }

  report(): ResumeReport {
    return { ...this.#report };
  }

  /**
   * Marks, in push order, the entries of `batch` the previous run may have pushed. Synchronous and
   * called as the batch is cut, so the per-key counts follow the order entries are pushed in.
   */
  select(batch: PendingBatch): void {
    if (this.#report.state !== "checking") return;
    const bound = this.#deps.perKeyBound;
    const newest = this.#newestNs;
    let picked: LogEntry[] | undefined;
    let key: string | undefined;
    let seen = 0;
    for (const e of batch.pushView) {
      if (e.checkpoint.key !== key) {
        if (key !== undefined) this.#seen.set(key, seen);
        key = e.checkpoint.key;
        seen = this.#seen.get(key) ?? 0;
      }
      if (seen >= bound) continue;
      seen++;
      if (e.timestampNs <= newest) (picked ??= []).push(e);
    }
    if (key !== undefined) this.#seen.set(key, seen);
    if (picked) batch.lookups = picked;
  }

  /** Looks up the batch's marked entries; what Loki holds leaves its push. Never fails the push. */
  async apply(batch: PendingBatch, signal: AbortSignal): Promise<void> {
    const lookups = batch.lookups;
    batch.lookups = undefined;
    if (lookups === undefined || this.#report.state !== "checking") return;
    const { lookup, settings } = this.#deps;
    if (this.#report.queries >= settings.max_queries || this.#spentMs >= settings.max_duration_ms) {
      this.#degrade("budget", undefined);
      return;
    }
    const stored = await this.#ask(lookup!, lookups, signal);
    if (stored === undefined) return;
    this.#report.entries_checked += lookups.length;
    if (!this.#counted) this.#countResume("checked", undefined);
    if (stored.size === 0) return;
    batch.skip(stored);
    this.#report.entries_skipped += stored.size;
    this.#deps.metrics.skipped.add(stored.size, { reason: "resume" });
  }

  /**
   * Of entries Loki refused as too far behind, those it holds anyway (a re-send of stored entries):
   * they are delivered, not dead letters. Asked whatever the resume's state; empty if Loki cannot say.
   */
  async holdsAnyway(entries: readonly LogEntry[], signal: AbortSignal): Promise<ReadonlySet<LogEntry>> {
    const lookup = this.#deps.lookup;
    if (lookup === undefined || !this.#deps.settings.enabled || entries.length === 0) return new Set();
    const stored = await this.#ask(lookup, entries, signal);
    if (stored === undefined || stored.size === 0) return new Set();
    this.#deps.metrics.skipped.add(stored.size, { reason: "too_far_behind" });
    return stored;
  }

  /**
   * One lookup; undefined when Loki could not say (the resume degrades). Each request is bounded by
   * the sink's deadlines; the resume's time budget is checked between lookups.
   */
  async #ask(
    lookup: StoredLookup,
    entries: readonly LogEntry[],
    signal: AbortSignal,
  ): Promise<ReadonlySet<LogEntry> | undefined> {
    const { clock, metrics } = this.#deps;
    if (signal.aborted) throw signal.reason as Error;
    const started = clock.monotonic();
    try {
      const answer = await lookup.stored(entries, signal);
      this.#report.queries += answer.queries;
      metrics.queries.add(answer.queries);
      return answer.stored;
    } catch (err) {
      // Read again: the run may have been torn down while the lookup ran.
      if (isAborted(signal)) throw err;
      if (err instanceof StoredLookupError) {
        this.#report.queries += err.queries;
        metrics.queries.add(err.queries);
      }
      this.#degrade(err instanceof StoredLookupError ? err.reason : "unreachable", err);
      return undefined;
    } finally {
      const ms = clock.monotonic() - started;
      this.#spentMs += ms;
      this.#report.seconds = this.#spentMs / 1000;
      metrics.seconds.add(ms / 1000);
    }
  }

  #degrade(reason: string, err: unknown): void {
    if (this.#report.state !== "checking") return;
    this.#report.state = "degraded";
    this.#report.reason = reason;
    this.#countResume("degraded", reason);
    const { settings, logger, perKeyBound } = this.#deps;
    const why =
      reason === "budget"
        ? `this resume spent its lookup budget (${this.#report.queries} queries, ` +
          `${Math.round(this.#spentMs / 1000)} s): raise sink.loki.reconcile.max_queries ` +
          `(${settings.max_queries}) or max_duration (${settings.max_duration_ms / 1000} s)`
        : `Loki's query API did not answer a lookup (${reason}): check sink.loki.reconcile.query_url and ` +
          `that the tenant and credentials may query`;
    logger.warn(
      {
        reason,
        ...(err === undefined ? {} : { err: describeError(err) }),
        entries_checked: this.#report.entries_checked,
        entries_skipped: this.#report.entries_skipped,
      },
      `Reconcile on resume degraded to at-least-once; ${why}. Until the next resume, entries the ` +
        `previous run may have pushed (up to ${perKeyBound} per checkpoint) are pushed unchecked, ` +
        `and a LogQL metric query may count those twice`,
    );
  }

  /** Once per resume at its first outcome; a resume that degrades after a good start counts again. */
  #countResume(outcome: "checked" | "degraded" | "off", reason: string | undefined): void {
    if (outcome !== "off") this.#counted = true;
    this.#deps.metrics.resumes.add(1, reason === undefined ? { outcome } : { outcome, reason });
  }
}

function isAborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

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
// Loki's own horizon (#35): its queriers ask the ingesters only for entries dated within
// `query_ingesters_within` of now, so an entry dated further back that the previous run pushed is
// invisible until Loki flushes its chunk. The resume learns that horizon from the lookup; where the
// operator allows it, it flushes the ingester once before looking past it (then exact), else what it
// could not see is pushed unchecked and counted, with one WARN per resume naming the window's age.
//
// Lookups never hold delivery hostage: when Loki's read path refuses, fails or times out, or the
// resume's budget of queries and time is spent, the rest is pushed unchecked (at-least-once, as
// before), with one WARN per resume and a metric.
import type { LogEntry } from "../model.ts";
import type { Logger } from "../obs/logger.ts";
import { StoredLookupError, type LookupHorizon, type StoredLookup } from "../sinks/sink.ts";
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
  /** Loki's ingester horizon this resume looked up within (seconds), once known; absent: none. */
  horizon_s?: number;
  /** Whether this resume flushed Loki's ingester before looking past the horizon. */
  flushed?: boolean;
  /** Entries dated past the horizon that no lookup could confirm, pushed unchecked. */
  entries_unverified: number;
  /** Age, at its lookup, of the oldest of those (seconds). */
  oldest_unverified_age_s?: number;
}

/**
 * Entries dated within this much of the horizon count as past it: the lookup and Loki's own clock
 * need a moment, and an entry on the edge is better flushed than missed.
 */
const HORIZON_MARGIN_MS = 60_000;

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
  /** Loki's horizon, asked at the first lookup of the resume. */
  #horizon: LookupHorizon | undefined;
  #flushed = false;
  #flushing: Promise<boolean> | undefined;
  #warnedUnverified = false;

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
      entries_unverified: 0,
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
    const blind = await this.#pastHorizon(lookup!, lookups, signal);
    const stored = await this.#ask(lookup!, lookups, signal);
    if (stored === undefined) return;
    this.#report.entries_checked += lookups.length;
    if (!this.#counted) this.#countResume("checked", undefined);
    if (blind.length > 0 && !this.#flushed) this.#unverified(blind, stored);
    if (stored.size === 0) return;
    batch.skip(stored);
    this.#report.entries_skipped += stored.size;
    this.#deps.metrics.skipped.add(stored.size, { reason: "resume" });
  }

  /**
   * Of `lookups`, those dated past Loki's ingester horizon, which a lookup may not see. The first time
   * there are any, the ingester is flushed if the operator allows it, so that from then on it does.
   */
  async #pastHorizon(lookup: StoredLookup, lookups: LogEntry[], signal: AbortSignal): Promise<LogEntry[]> {
    if (lookup.horizon === undefined) return [];
    this.#horizon ??= await lookup.horizon(signal);
    const ms = this.#horizon.ms;
    if (ms === undefined) return [];
    this.#report.horizon_s = ms / 1000;
    const edge = BigInt(Math.floor(this.#deps.clock.now() - ms + HORIZON_MARGIN_MS)) * 1_000_000n;
    const blind = lookups.filter((e) => e.timestampNs < edge);
    if (blind.length === 0 || lookup.flush === undefined) return blind;
    // Batches in flight together ask at once: one flush serves them all.
    this.#flushing ??= this.#flush(lookup.flush.bind(lookup), signal);
    await this.#flushing;
    return blind;
  }

  /** Flushes Loki's ingester once per resume; false (and a WARN) when it could not. */
  async #flush(flush: (signal: AbortSignal) => Promise<void>, signal: AbortSignal): Promise<boolean> {
    try {
      await flush(signal);
      this.#flushed = true;
      this.#report.flushed = true;
      this.#deps.metrics.flushes.add(1, { outcome: "flushed" });
      return true;
    } catch (err) {
      if (isAborted(signal)) throw err;
      this.#deps.metrics.flushes.add(1, { outcome: "failed" });
      this.#deps.logger.warn(
        { err: describeError(err) },
        "Reconcile on resume could not flush Loki's ingester (sink.loki.reconcile.flush_url); entries " +
          "dated past its horizon are looked up without it: check the URL reaches the ingester's /flush",
      );
      return false;
    }
  }

  /** Past the horizon and not found: pushed unchecked. Counted, and said once per resume. */
  #unverified(blind: readonly LogEntry[], stored: ReadonlySet<LogEntry>): void {
    let n = 0;
    let oldest: bigint | undefined;
    for (const e of blind) {
      if (stored.has(e)) continue;
      n++;
      if (oldest === undefined || e.timestampNs < oldest) oldest = e.timestampNs;
    }
    if (n === 0 || oldest === undefined) return;
    const ageS = Math.max(0, Math.round((this.#deps.clock.now() - Number(oldest / 1_000_000n)) / 1000));
    const report = this.#report;
    report.entries_unverified += n;
    report.oldest_unverified_age_s = Math.max(report.oldest_unverified_age_s ?? 0, ageS);
    this.#deps.metrics.unverified.add(n, { reason: "ingester_horizon" });
    this.#deps.metrics.windowAge.record(report.oldest_unverified_age_s);
    if (this.#warnedUnverified) return;
    this.#warnedUnverified = true;
    const horizon = this.#horizon!;
    const hours = (s: number): string => `${(s / 3600).toFixed(1)} h`;
    this.#deps.logger.warn(
      {
        entries_unverified: n,
        oldest_age_s: ageS,
        horizon_s: (horizon.ms ?? 0) / 1000,
        horizon_source: horizon.source,
        ...(horizon.why === undefined ? {} : { horizon_why: horizon.why }),
      },
      `Reconcile on resume cannot see entries dated ${hours(ageS)} back: Loki's queriers ask its ` +
        `ingesters only within ${hours((horizon.ms ?? 0) / 1000)} (query_ingesters_within, ` +
        `${horizon.source === "config" ? "read from its /config" : horizon.source === "setting" ? "sink.loki.reconcile.ingesters_within" : "Loki's default: its /config did not answer"}), ` +
        `so entries the previous run may have pushed that far back are pushed unchecked and a LogQL ` +
        `metric query may count a re-sent one twice (Loki drops most identical re-sends itself). For ` +
        `exactness, set sink.loki.reconcile.flush_url to the ingester's /flush (a Loki you run), or raise ` +
        `Loki's query_ingesters_within above the oldest backlog you replay`,
    );
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

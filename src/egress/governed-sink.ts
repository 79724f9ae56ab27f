// The egress governor as a Sink decorator: every push the daemon or `sf2loki backfill` makes to one
// Loki destination passes the daily budget and then the rate caps before it reaches the real sink.
// Holding a push here holds the lane's in-flight slot, so both pause and rate limiting reach the
// sources as backpressure through the bounded lanes. A retried push passes again: a retry is real
// egress for Loki's rate limits too, and the budget counts bytes only once Loki accepted them.
// Each Loki destination has its own governor (#123): the top-level one keeps the Python version's
// budget key and series; an org's own destination names itself in its key, series and messages.
import type { Attributes, Meter } from "@opentelemetry/api";
import type { Batch } from "../model.ts";
import type { Logger } from "../obs/logger.ts";
import type { DropListener, LandListener, PushResult, RequestSlots, Sink } from "../sinks/sink.ts";
import type { CheckpointStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { BUDGET_KEY, DailyBudget } from "./budget.ts";
import { BudgetCommittingStore } from "./budget-store.ts";
import { EgressMetrics } from "./metrics.ts";
import { RateGate, laneOfBatch, type EgressLane } from "./rate-gate.ts";

export interface EgressSettings {
  max_lines_per_second: number;
  max_bytes_per_second: number;
  daily_byte_budget: number;
  budget_action: "pause" | "drop";
}

export interface GovernorDeps {
  clock: Clock;
  logger: Logger;
  meter: Meter;
  /** Shared by every destination's governor (one set of instruments per meter); else its own. */
  metrics?: EgressMetrics;
  /** Absent: the top-level `sink.loki` destination (key `egress:budget`, no series attribute). */
  destination?: DestinationIdentity;
}

/** How an org's own Loki destination is told apart in the store, the metrics and the messages. */
export interface DestinationIdentity {
  /** The first org that sends to it. */
  name: string;
  /** Its budget counter's checkpoint key (`egress:budget:<name>`). */
  budgetKey: string;
  /** The orgs whose entries go there, for /statusz and the readiness reason. */
  orgs: readonly string[];
}

export const BUDGET_PAUSED_REASON = "degraded: daily egress budget exhausted (resets at 00:00 UTC)";
/** A paused push re-checks at least this often, so a wall-clock step is noticed within a minute. */
const PAUSE_RECHECK_MS = 60_000;
const DROP_WARN_EVERY_MS = 60_000;

/** Any limit set: only then is the governor built. */
export function egressConfigured(e: EgressSettings): boolean {
  return e.max_lines_per_second > 0 || e.max_bytes_per_second > 0 || e.daily_byte_budget > 0;
}

export class GovernedSink implements Sink {
  readonly settings: EgressSettings;
  /** `undefined` for the top-level destination. */
  readonly destination: DestinationIdentity | undefined;
  readonly #inner: Sink;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #gate: RateGate | undefined;
  readonly #budget: DailyBudget | undefined;
  readonly #metrics: EgressMetrics;
  readonly #attributes: Attributes;
  /** Where its daily count is persisted: `egress:budget`, or the destination's own key. */
  readonly budgetKey: string;
  readonly #pausedReason: string;
  /** Pushes held by a budget pause right now; paused while > 0. */
  #holding = 0;
  #resumedAtMono: number | undefined;
  #pausedLoggedDate: string | undefined;
  #lastDropWarnMono = Number.NEGATIVE_INFINITY;
  #waits = 0;
  #waitedMs = 0;
  #droppedEntries = 0;

  constructor(inner: Sink, settings: EgressSettings, deps: GovernorDeps) {
    this.#inner = inner;
    this.settings = settings;
    this.destination = deps.destination;
    this.#clock = deps.clock;
    const dest = deps.destination;
    this.#attributes = dest ? { destination: dest.name } : {};
    this.budgetKey = dest?.budgetKey ?? BUDGET_KEY;
    this.#pausedReason = dest
      ? `degraded: daily egress budget exhausted for Loki destination '${dest.name}' (orgs ${dest.orgs.join(", ")}; resets at 00:00 UTC)`
      : BUDGET_PAUSED_REASON;
    this.#logger = deps.logger.child({ component: "egress", ...this.#attributes });
    const caps = {
      linesPerSecond: settings.max_lines_per_second,
      bytesPerSecond: settings.max_bytes_per_second,
    };
    this.#gate =
      caps.linesPerSecond > 0 || caps.bytesPerSecond > 0 ? new RateGate(caps, deps.clock) : undefined;
    this.#budget =
      settings.daily_byte_budget > 0
        ? new DailyBudget(settings.daily_byte_budget, deps.clock, this.#logger)
        : undefined;
    this.#metrics = deps.metrics ?? new EgressMetrics(deps.meter);
    this.#metrics.add(
      { budgetUsedBytes: () => this.#budget?.used ?? 0, paused: () => this.#holding > 0 },
      this.#attributes,
    );
  }

  async push(
    batch: Batch,
    signal?: AbortSignal,
    onDropped?: DropListener,
    onLanded?: LandListener,
    slots?: RequestSlots,
  ): Promise<PushResult> {
    let lines = 0;
    let bytes = 0;
    for (const e of batch) {
      if (e.checkpointOnly) continue;
      lines++;
      bytes += e.lineBytes;
    }
    if (lines === 0) return this.#inner.push(batch, signal, onDropped, onLanded, slots);
    const budget = this.#budget;
    if (budget?.wouldExceed(bytes)) {
      if (this.settings.budget_action === "drop") return this.#drop(batch, budget);
      await this.#pause(budget, bytes, signal);
    }
    budget?.reserve(bytes);
    let accepted = 0;
    try {
      if (this.#gate) await this.#rate(lines, bytes, laneOfBatch(batch), signal);
      const result = await this.#inner.push(batch, signal, onDropped, onLanded, slots);
      accepted = bytes - droppedBytes(result);
      return result;
    } finally {
      budget?.settle(bytes, accepted);
    }
  }

  async #rate(
    lines: number,
    bytes: number,
    lane: EgressLane,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    const waited = await this.#gate!.acquire(lines, bytes, lane, signal);
    this.#metrics.rateLimitedWait.record(waited / 1000, this.#attributes);
    if (waited > 0) {
      this.#waits++;
      this.#waitedMs += waited;
    }
  }

  close(): Promise<void> {
    return this.#inner.close();
  }

  /**
   * The store a pipeline commits through: every checkpoint write also carries today's count, so the
   * count is persisted with the commits (one write, no second writer of the document).
   */
  bind(store: CheckpointStore): CheckpointStore {
    const budget = this.#budget;
    return budget ? new BudgetCommittingStore(store, this.budgetKey, () => budget.serialize()) : store;
  }

  /** A term's (or a backfill's) first act: continue the day's count from the store. */
  async startTerm(store: CheckpointStore): Promise<void> {
    if (!this.#budget) return;
    this.#budget.load(await store.load(this.budgetKey));
  }

  /** The readiness reason while a budget pause holds pushes. */
  get pausedReason(): string | undefined {
    return this.#holding > 0 ? this.#pausedReason : undefined;
  }

  /**
   * For the watchdog: a budget pause is deliberate, not a stall. `resumedAtMono` is when the last
   * pause ended, so the time spent paused is not counted against the pipeline either.
   */
  hold(): { paused: boolean; resumedAtMono: number | undefined } {
    return { paused: this.#holding > 0, resumedAtMono: this.#resumedAtMono };
  }

  /** The /statusz egress section. */
  status(): Record<string, unknown> {
    const b = this.#budget;
    const dest = this.destination;
    return {
      ...(dest ? { destination: dest.name, orgs: dest.orgs, budget_key: dest.budgetKey } : {}),
      configured: true,
      max_lines_per_second: this.settings.max_lines_per_second,
      max_bytes_per_second: this.settings.max_bytes_per_second,
      daily_byte_budget: this.settings.daily_byte_budget,
      budget_action: this.settings.budget_action,
      budget_date: b?.date ?? null,
      budget_used_bytes: b?.used ?? 0,
      budget_remaining_bytes: b ? Math.max(0, b.limit - b.used) : null,
      paused: this.#holding > 0,
      pushes_waiting_for_rate: this.#gate?.waiting ?? 0,
      rate_limited_pushes: this.#waits,
      rate_limited_wait_seconds: Math.round(this.#waitedMs) / 1000,
      budget_dropped_entries: this.#droppedEntries,
    };
  }

  #drop(batch: Batch, budget: DailyBudget): PushResult {
    const entries = batch.filter((e) => !e.checkpointOnly);
    this.#droppedEntries += entries.length;
    const now = this.#clock.monotonic();
    if (now - this.#lastDropWarnMono >= DROP_WARN_EVERY_MS) {
      this.#lastDropWarnMono = now;
      this.#logger.warn(
        { used_bytes: budget.used, daily_byte_budget: budget.limit, dropped_entries: entries.length },
        "daily egress budget spent: dropping entries until 00:00 UTC (budget_action: drop); their checkpoints move on",
      );
    }
    return { dropped: [{ entries, reason: "budget" }] };
  }

  /** Holds one push until the day rolls over (or `signal` aborts: the push is then abandoned). */
  async #pause(budget: DailyBudget, bytes: number, signal: AbortSignal | undefined): Promise<void> {
    this.#holding++;
    if (this.#pausedLoggedDate !== budget.date) {
      this.#pausedLoggedDate = budget.date;
      this.#logger.error(
        { used_bytes: budget.used, daily_byte_budget: budget.limit, date: budget.date },
        "daily egress budget spent: pushes and checkpoints are held until 00:00 UTC (budget_action: pause); " +
          "nothing is lost, the sources wait; raise sink.loki.egress.daily_byte_budget to resume sooner",
      );
    }
    try {
      while (budget.wouldExceed(bytes)) {
        await this.#clock.sleep(Math.min(budget.msToMidnight(), PAUSE_RECHECK_MS), signal);
      }
    } finally {
      if (--this.#holding === 0) this.#resumedAtMono = this.#clock.monotonic();
    }
  }
}

function droppedBytes(result: PushResult): number {
  let n = 0;
  for (const group of result.dropped) for (const e of group.entries) n += e.lineBytes;
  return n;
}

// The pipeline's public face: sources in, batches to the sink, checkpoints to the store after
// delivery (spec B §2). Knows only the seam interfaces; each run() builds fresh lanes so a
// re-acquired leader starts with empty queues and budgets.
import { metrics as otel, type Meter } from "@opentelemetry/api";
import type { Labels } from "../model.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import type { Sink, StoredLookup } from "../sinks/sink.ts";
import type { Source } from "../sources/source.ts";
import type { CheckpointStore } from "../state/store.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { recordCommitGauges } from "./checkpoint-gauges.ts";
import type { DeadLetterSink } from "./dead-letters.ts";
import { PipelineBusyError } from "./errors.ts";
import type { LaneStatus } from "./lane.ts";
import { PipelineMetrics } from "./metrics.ts";
import type { ProgressReport } from "./progress.ts";
import { PipelineRun, routeOfLane } from "./run.ts";
import { DEFAULT_RECONCILE, type ReconcileSettings, type ResumeReport } from "./reconcile.ts";
import { ReconcileMetrics } from "./reconcile-metrics.ts";
import { RefusalLog } from "./refusal-log.ts";
import { DEFAULT_SHUTDOWN_GRACE_MS, validateBatchSettings, type BatchSettings } from "./settings.ts";

/**
 * Sources whose entries go to a sink of their own, through lanes of their own: an org's own Loki
 * destination (#123). Own lanes, not a sink that splits batches by org: a destination that is paused
 * by its budget, or failing, then holds only its own lanes' pushes and checkpoints, and a retry never
 * re-sends another destination's part of a batch.
 */
export interface PipelineRoute {
  /** Names its lanes: `streaming@<name>`, `bulk@<name>`. */
  name: string;
  sources: readonly Source[];
  sink: Sink;
  /** Loki's read path for this route's destination (reconcile on resume, #27). */
  lookup?: StoredLookup;
}

export interface PipelineOptions {
  sources: readonly Source[];
  sink: Sink;
  /** Loki's read path for the main route; none: its resumes are not reconciled. */
  lookup?: StoredLookup;
  /** `sink.loki.reconcile`; default DEFAULT_RECONCILE (on wherever a route has a lookup). */
  reconcile?: ReconcileSettings;
  /** Further routes beside `sources` → `sink`; every lane commits to the one `store`. */
  routes?: readonly PipelineRoute[];
  store: CheckpointStore;
  batch: BatchSettings;
  /** `service.shutdown_grace` in ms: drain time a stopped run gets before it is force-cancelled. */
  shutdown_grace_ms?: number;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Where entries Loki refused for good are kept (the wiring's dead-letter store); none: only counted. */
  deadLetters?: DeadLetterSink;
  /** Merged over every real entry's labels (static wins); can also be set later, before run(). */
  staticLabels?: Labels;
}

/** A snapshot for /statusz. Times are wall-clock epoch milliseconds. */
export interface PipelineStatus {
  running: boolean;
  /** By lane key: `streaming`, `bulk`, and `<lane>@<route>` for each further route. */
  lanes: Record<string, LaneStatus>;
  checkpoints: Record<string, { last_commit_ms: number }>;
  /** Keys the current (or last) run left uncommitted on shutdown. */
  abandoned_keys: readonly string[];
  /** The current (or last) run's resume per route ("" is the main one): what reconcile did. */
  resumes: Record<string, ResumeReport>;
}

export class Pipeline {
  readonly #opts: PipelineOptions;
  readonly #settings: BatchSettings;
  readonly #clock: Clock;
  readonly #logger: Logger;
  readonly #metrics: PipelineMetrics;
  readonly #reconcileMetrics: ReconcileMetrics;
  readonly #refusals: RefusalLog;
  readonly #lastCommit = new Map<string, number>();
  #staticLabels: Labels;
  #run: PipelineRun | undefined;
  #running = false;

  constructor(opts: PipelineOptions) {
    this.#opts = opts;
    this.#settings = validateBatchSettings({ ...opts.batch });
    this.#clock = opts.clock ?? systemClock;
    this.#logger = (opts.logger ?? silentLogger).child({ component: "pipeline" });
    this.#staticLabels = { ...opts.staticLabels };
    const meter = opts.meter ?? otel.getMeter("sf2loki");
    this.#reconcileMetrics = new ReconcileMetrics(meter);
    this.#refusals = new RefusalLog(this.#logger, this.#clock);
    this.#metrics = new PipelineMetrics(
      meter,
      () => {
        let depth = 0;
        for (const lane of this.#run?.lanes.values() ?? []) {
          depth += lane.queue.size;
          // Also at collection time: a lane stuck behind a failing push flushes no batches, and
          // its ingest counts must still be exported.
          for (const tally of lane.tallies) tally.flush();
        }
        return depth;
      },
      () => {
        let bytes = 0;
        for (const lane of this.#run?.lanes.values() ?? []) bytes += lane.queue.bytes;
        return bytes;
      },
    );
  }

  /** The app installs static labels after its startup auth probe (spec B §3.2). */
  setStaticLabels(labels: Labels): void {
    this.#staticLabels = { ...labels };
  }

  /**
   * Runs until every source finished and everything drained, or until `signal` aborts and the drain
   * completes (or the shutdown grace runs out). Rejects with the first store error, unclassified
   * sink error or source error, after tearing the run down.
   */
  async run(signal: AbortSignal): Promise<void> {
    if (this.#running) throw new PipelineBusyError();
    const main = { name: "", sources: this.#opts.sources, sink: this.#opts.sink };
    const routes = [
      this.#opts.lookup ? { ...main, lookup: this.#opts.lookup } : main,
      ...(this.#opts.routes ?? []),
    ];
    if (routes.every((r) => r.sources.length === 0)) return;
    this.#running = true;
    const run = new PipelineRun(
      {
        routes,
        store: this.#opts.store,
        settings: this.#settings,
        shutdownGraceMs: this.#opts.shutdown_grace_ms ?? DEFAULT_SHUTDOWN_GRACE_MS,
        clock: this.#clock,
        logger: this.#logger,
        metrics: this.#metrics,
        reconcileMetrics: this.#reconcileMetrics,
        reconcile: this.#opts.reconcile ?? DEFAULT_RECONCILE,
        refusals: this.#refusals,
        staticLabels: this.#staticLabels,
        onCommitted: this.#onCommitted,
        ...(this.#opts.deadLetters ? { deadLetters: this.#opts.deadLetters } : {}),
      },
      signal,
    );
    this.#run = run;
    try {
      await run.execute();
    } finally {
      this.#running = false;
      // After the drain's last commit: sources that mirror commits elsewhere finish them (bounded).
      await Promise.allSettled(
        routes.flatMap((r) => r.sources.map((source) => source.settled?.() ?? Promise.resolve())),
      );
    }
  }

  status(): PipelineStatus {
    const lanes: Record<string, LaneStatus> = {};
    for (const [name, lane] of this.#run?.lanes ?? []) lanes[name] = lane.status();
    const checkpoints: Record<string, { last_commit_ms: number }> = {};
    for (const [key, at] of this.#lastCommit) checkpoints[key] = { last_commit_ms: at };
    const resumes: Record<string, ResumeReport> = {};
    for (const [route, reconciler] of this.#run?.reconcilers ?? []) resumes[route] = reconciler.report();
    return {
      running: this.#running,
      lanes,
      checkpoints,
      abandoned_keys: this.#run?.abandoned.keys ?? [],
      resumes,
    };
  }

  /**
   * Monotonic ms (of the injected clock) of the earliest unresolved push failure over all lanes of
   * the running run (spec B §2.11); undefined when every lane is healthy or nothing runs.
   */
  sinkFailingSince(): number | undefined {
    return this.sinkFailing()?.sinceMono;
  }

  /** The same, with the route whose lane failed first ("" for the main route). */
  sinkFailing(): { sinceMono: number; route: string } | undefined {
    if (!this.#running) return undefined;
    let first: { sinceMono: number; route: string } | undefined;
    for (const [key, lane] of this.#run?.lanes ?? []) {
      const since = lane.failingSince();
      if (since === undefined || (first !== undefined && since >= first.sinceMono)) continue;
      first = { sinceMono: since, route: routeOfLane(key) };
    }
    return first;
  }

  /**
   * The running run's progress (the watchdog's input); undefined when nothing runs. The lanes of
   * `held` routes ("" is the main one) are left out: a paused destination is not a stalled pipeline,
   * and the other destinations' lanes are still watched.
   */
  progress(held?: ReadonlySet<string>): ProgressReport | undefined {
    return this.#running ? this.#run?.progress(held) : undefined;
  }

  /** After a demotion drained: the next acquisition re-reads what another leader committed. */
  resetState(): void {
    this.#opts.store.reset();
  }

  readonly #onCommitted = (commits: ReadonlyMap<string, string>): void => {
    const now = this.#clock.now();
    for (const key of commits.keys()) this.#lastCommit.set(key, now);
    recordCommitGauges(this.#metrics, commits, now);
  };
}

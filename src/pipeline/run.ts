// One pipeline run (spec B §2.3, §2.9, §2.10): fresh lanes, one producer per source, one batcher per
// lane. It ends in exactly one of three ways: every source finished and everything drained (resolve),
// a task failed (tear down, reject with that error), or the stop signal fired and the shutdown grace
// ran out first (abandon what is uncommitted, tear down, resolve). Teardown waits a bounded moment
// for tasks to wind down; a source or sink that ignores cancellation cannot hang the run.
import type { Labels } from "../model.ts";
import type { Logger } from "../obs/logger.ts";
import type { Sink, StoredLookup } from "../sinks/sink.ts";
import { laneOf, type LaneName, type Source } from "../sources/source.ts";
import type { CheckpointStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { describeError, Sf2LokiError } from "../errors.ts";
import { AbandonedKeys } from "./abandoned.ts";
import { ignore } from "./abort.ts";
import { PipelineCancelledError } from "./errors.ts";
import { IngestTally } from "./ingest-tally.ts";
import { Lane } from "./lane.ts";
import type { DeadLetterSink } from "./dead-letters.ts";
import type { PipelineMetrics } from "./metrics.ts";
import { Producer } from "./producer.ts";
import { CommitFeed } from "./commit-feed.ts";
import { Reconciler, type ReconcileSettings } from "./reconcile.ts";
import type { ReconcileMetrics } from "./reconcile-metrics.ts";
import type { RefusalLog } from "./refusal-log.ts";
import { Progress, type ProgressReport } from "./progress.ts";
import type { BatchSettings } from "./settings.ts";

/** How long a torn-down run waits for its tasks to notice before it returns anyway. */
const TEARDOWN_SETTLE_MS = 1000;

/** The route a lane key belongs to: "" for `streaming`/`bulk`, `<route>` for `<lane>@<route>`. */
export function routeOfLane(key: string): string {
  const at = key.indexOf("@");
  return at < 0 ? "" : key.slice(at + 1);
}

/** Sources and the sink their entries go to, through lanes of their own. */
export interface RunRoute {
  /** "" for the main route (lanes `streaming`, `bulk`); else its lanes are `<lane>@<name>`. */
  name: string;
  sources: readonly Source[];
  sink: Sink;
  lookup?: StoredLookup;
}

export interface RunDeps {
  routes: readonly RunRoute[];
  store: CheckpointStore;
  settings: BatchSettings;
  shutdownGraceMs: number;
  clock: Clock;
  logger: Logger;
  metrics: PipelineMetrics;
  reconcileMetrics: ReconcileMetrics;
  reconcile: ReconcileSettings;
  refusals: RefusalLog;
  staticLabels: Labels;
  onCommitted: (commits: ReadonlyMap<string, string>) => void;
  deadLetters?: DeadLetterSink;
}

export class PipelineRun {
  /** By lane key: `streaming`, `bulk`, and `<lane>@<route>` for each further route. */
  readonly lanes = new Map<string, Lane>();
  /** By route name: this run's resume, one per destination (its lanes share the lookup budget). */
  readonly reconcilers = new Map<string, Reconciler>();
  readonly abandoned: AbandonedKeys;
  readonly #progress: Progress;
  readonly #deps: RunDeps;
  readonly #stop: AbortSignal;
  readonly #cancel = new AbortController();
  /**
   * Aborts when the stop signal fires or the run is torn down: the sources end their streams and the
   * pushes stop retrying. A plain signal fed by both rather than AbortSignal.any: sources read
   * `aborted` once per event, and a composite signal's getter costs ~130 ns a read against ~4 ns
   * (Node 24), more than the rest of a producer's work per entry.
   */
  readonly #draining = new AbortController();
  readonly #grace = new AbortController();
  readonly #producers: Producer[] = [];
  /** The sources' checkpoint reader: the store's loads and what this run committed. */
  readonly #feed: CommitFeed;
  readonly #tasks = new Set<Promise<unknown>>();
  readonly #outcome = Promise.withResolvers<undefined>();
  #ending = false;

  constructor(deps: RunDeps, stop: AbortSignal) {
    this.#deps = deps;
    this.#stop = stop;
    this.abandoned = new AbandonedKeys(deps.metrics, deps.logger);
    this.#progress = new Progress(deps.clock);
    this.#feed = new CommitFeed(deps.store);
    if (stop.aborted) this.#draining.abort(stop.reason);
    const draining = this.#draining.signal;
    for (const route of deps.routes)
      for (const source of route.sources) {
        const lane = this.#lane(laneOf(source), route, draining);
        const tally = new IngestTally(source.name, deps.metrics.ingested, deps.metrics.ingestLag);
        lane.tallies.push(tally);
        lane.producers++;
        this.#producers.push(
          new Producer({
            source,
            state: this.#feed,
            queue: lane.queue,
            tally,
            clock: deps.clock,
            staticLabels: deps.staticLabels,
            sourceSignal: draining,
            cancelled: this.#cancel.signal,
          }),
        );
      }
  }

  /**
   * For the watchdog: whether this run has work, and how long since it last moved or tried. Lanes of
   * `held` routes (deliberately paused: an egress budget) do not count as work.
   */
  progress(held?: ReadonlySet<string>): ProgressReport {
    let pending = false;
    for (const [key, lane] of this.lanes) {
      if (held?.has(routeOfLane(key))) continue;
      const st = lane.status();
      if (st.queued_entries + st.batching_entries + st.in_flight + st.awaiting_commit > 0) pending = true;
    }
    return this.#progress.report(pending);
  }

  async execute(): Promise<void> {
    for (const producer of this.#producers) this.#track(producer.run());
    const lanesDone = Promise.all([...this.lanes.values()].map((lane) => lane.consume()));
    this.#track(
      lanesDone.then(() => {
        if (this.#claimEnd()) this.#outcome.resolve(undefined);
      }),
    );
    if (this.#stop.aborted) this.#onStop();
    else this.#stop.addEventListener("abort", this.#onStop, { once: true });
    try {
      await this.#outcome.promise;
    } finally {
      this.#grace.abort();
      this.#stop.removeEventListener("abort", this.#onStop);
      for (const lane of this.lanes.values()) for (const tally of lane.tallies) tally.flush();
    }
  }

  #lane(name: LaneName, route: RunRoute, draining: AbortSignal): Lane {
    const key = route.name === "" ? name : `${name}@${route.name}`;
    let lane = this.lanes.get(key);
    if (lane) return lane;
    const { settings, clock, store, metrics, onCommitted, deadLetters } = this.#deps;
    const sink = route.sink;
    const logger = this.#deps.logger.child({ lane: key });
    const reconciler = this.#reconciler(route);
    lane = new Lane(name, {
      settings,
      clock,
      reconciler,
      push: {
        sink,
        clock,
        metrics,
        logger,
        draining,
        cancelled: this.#cancel.signal,
        onAttempt: this.#progress.progressed,
        refusals: this.#deps.refusals,
        reconciler,
        ...(deadLetters ? { deadLetters } : {}),
      },
      commit: {
        store,
        clock,
        logger,
        abandoned: this.abandoned,
        maxInFlight: settings.max_in_flight,
        maxUncommitted: settings.max_uncommitted,
        onAttempt: this.#progress.attempted,
        onCommitted: (commits) => {
          this.#progress.progressed();
          onCommitted(commits);
          this.#feed.published(commits);
        },
        onError: (err) => {
          this.#fail(err);
        },
      },
      track: (task) => {
        this.#track(task);
      },
    });
    this.lanes.set(key, lane);
    return lane;
  }

  /** The route's resume: every run starts from checkpoints some earlier run committed. */
  #reconciler(route: RunRoute): Reconciler {
    let reconciler = this.reconcilers.get(route.name);
    if (reconciler) return reconciler;
    const { settings, clock, logger, reconcileMetrics, reconcile } = this.#deps;
    reconciler = new Reconciler({
      lookup: route.lookup,
      settings: reconcile,
      perKeyBound: settings.max_uncommitted * settings.max_entries,
      clock,
      logger: route.name === "" ? logger : logger.child({ destination: route.name }),
      metrics: reconcileMetrics,
    });
    this.reconcilers.set(route.name, reconciler);
    return reconciler;
  }

  #track(task: Promise<unknown>): void {
    this.#tasks.add(task);
    task.then(
      () => this.#tasks.delete(task),
      (err: unknown) => {
        this.#tasks.delete(task);
        this.#fail(err);
      },
    );
  }

  readonly #onStop = (): void => {
    if (!this.#draining.signal.aborted) this.#draining.abort(this.#stop.reason);
    this.#deps.clock.sleep(this.#deps.shutdownGraceMs, this.#grace.signal).then(() => {
      this.#expire();
    }, ignore);
  };

  /** A store write, an unclassified sink error or a source failed: stop everything, reject. */
  #fail(err: unknown): void {
    if (!this.#claimEnd()) return;
    this.#deps.logger.error(
      { err: describeError(err), code: err instanceof Sf2LokiError ? err.code : undefined },
      "Pipeline run failed; its sources and pushes are stopped and the error is passed on",
    );
    this.#teardown("a task failed", () => {
      this.#outcome.reject(err);
    });
  }

  /** The shutdown grace ran out while draining: abandon what is left, force-cancel, resolve. */
  #expire(): void {
    if (!this.#claimEnd()) return;
    const graceS = this.#deps.shutdownGraceMs / 1000;
    for (const [key, lane] of this.lanes) {
      const { keys, entries } = lane.uncommitted();
      if (keys.size > 0)
        this.abandoned.add(keys, entries, `Shutdown grace of ${graceS}s expired (${key} lane)`);
    }
    this.#deps.logger.warn(
      { grace_s: graceS },
      "Shutdown grace expired before the pipeline drained; force-cancelling pushes and sources " +
        "(raise service.shutdown_grace if Loki is merely slow)",
    );
    this.#teardown("shutdown grace expired", () => {
      this.#outcome.resolve(undefined);
    });
  }

  #teardown(why: string, settle: () => void): void {
    const reason = new PipelineCancelledError(why);
    this.#cancel.abort(reason);
    if (!this.#draining.signal.aborted) this.#draining.abort(reason);
    for (const lane of this.lanes.values()) lane.cancel(reason);
    const timer = new AbortController();
    const windDown = this.#deps.clock.sleep(TEARDOWN_SETTLE_MS, timer.signal).catch(ignore);
    void Promise.race([Promise.allSettled([...this.#tasks]), windDown]).then(() => {
      timer.abort();
      settle();
    });
  }

  /** The first of finish / fail / expire decides the outcome; the others become no-ops. */
  #claimEnd(): boolean {
    if (this.#ending) return false;
    this.#ending = true;
    return true;
  }
}

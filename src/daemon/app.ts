// The composition root's running half: health server, startup auth probe, leadership, the pipeline per
// acquisition, and an orderly shutdown (pipeline, sink, store last). A fenced commit demotes this
// process to standby in place; it never exits for it (#97). A lost term demotes first (leader gauge 0,
// /readyz standby) and drains second (#17); a checkpoint store outage is retried in place, never fatal.

import { streamedTopics } from "../sources/pubsub/settings.ts";
import type { Config } from "../config/schema.ts";
import { closeInOrder, graphCloseSteps } from "./close-steps.ts";
import { describeError } from "../errors.ts";
import { startHealthServer, type HealthServer } from "../obs/health.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { createMetrics, type Metrics } from "../obs/metrics.ts";
import { logProxyAtStart } from "../obs/proxy-banner.ts";
import { StateFenceError } from "../state/errors.ts";
import { unsaltedHashSources } from "../egress/salt-check.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { retry } from "../util/retry.ts";
import { Watchdog } from "./watchdog.ts";
import { buildGraph, type Graph } from "./wiring.ts";
import type { LossReason } from "../coordinate/coordinator.ts";
import type { Labels } from "../model.ts";
import { withoutUserinfo } from "../util/userinfo.ts";
import { createShardedApp } from "./sharded-app.ts";
import type { App, AppDeps } from "./app-types.ts";

export type { App, AppDeps } from "./app-types.ts";

/** Builds the whole graph offline (no network); the same wiring `--check` validates. */
export function createApp(config: Config, deps: AppDeps = {}): App {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const metrics: Metrics = createMetrics({
    version: deps.version ?? "0.0.0",
    telemetry: { ...config.service.telemetry, headers: telemetryHeaders(config) },
  });
  // Orgs sharded across replicas: a shell over one graph per org (sharded-app.ts); else one leader.
  if (config.coordinate.sharding.enabled) return createShardedApp(config, deps, metrics);
  const graph = buildGraph(config, {
    clock,
    logger,
    meter: metrics.meter,
    ...(deps.sink ? { sink: deps.sink } : {}),
    ...(deps.pollOnce ? { pollOnce: true } : {}),
    ...(deps.coordinator ? { coordinator: deps.coordinator } : {}),
  });
  return new RunningApp(config, graph, metrics, clock, logger, deps);
}

/** Exported for `doctor`, which probes the OTLP endpoint with exactly the headers the exporter sends. */
export function telemetryHeaders(config: Config): Record<string, string> {
  const t = config.service.telemetry;
  if (!t.enabled || t.auth === "none") return { ...t.headers };
  const user = t.basic_auth_user || config.sink.loki.tenant_id || "";
  const token = t.basic_auth_token ?? config.sink.loki.auth_token ?? "";
  return { Authorization: `Basic ${Buffer.from(`${user}:${token}`).toString("base64")}`, ...t.headers };
}

/** A store call unanswered this long, or failing since, makes /readyz say so (well within 30 s). */
const STORE_UNREADY_AFTER_MS = 10_000;
/** Backoff of the startup org-id resolution and of the term claim: 1 s doubling to 60 s. */
const STARTUP_RETRY = {
  maxAttempts: Number.POSITIVE_INFINITY,
  backoffMs: (attempt: number) => Math.min(60_000, 1000 * 2 ** (attempt - 1)),
};

class RunningApp implements App {
  readonly graph: Graph;
  readonly #config: Config;
  readonly #metrics: Metrics;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #deps: AppDeps;
  readonly #watchdog: Watchdog;
  #notReady: string | undefined = "not ready";
  #health: HealthServer | undefined;
  #isLeader = false;
  #orgsFailing = new Set<string>();

  constructor(config: Config, graph: Graph, metrics: Metrics, clock: Clock, logger: Logger, deps: AppDeps) {
    this.#config = config;
    this.graph = graph;
    this.#metrics = metrics;
    this.#clock = clock;
    this.#log = logger.child({ component: "app" });
    this.#deps = deps;
    // Read live at every scrape, and only 1 while the coordinator still vouches for the lease: a process
    // that was paused past its fence deadline says 0 before its own timers have caught up (#17).
    metrics.meter
      .createObservableGauge("sf2loki_leader", { description: "1 while this replica leads" })
      .addCallback((r) => {
        r.observe(this.#leading() ? 1 : 0);
      });
    const wd = config.service.watchdog;
    const governors = graph.governors;
    this.#watchdog = new Watchdog({
      stallMs: wd.stall_timeout,
      livenessMs: wd.liveness_timeout,
      clock,
      meter: metrics.meter,
      logger: this.#log,
      leading: () => this.#leading(),
      // A budget pause is taken out per destination: its lanes are not work the watchdog waits on,
      // every other destination's lanes still are (#123). So `hold` never says paused for the whole
      // pipeline; it only carries when the last pause ended, so the paused time is not held against it.
      progress: () => graph.pipeline.progress(governors.pausedRoutes()),
      storeFailing: () => graph.store.failing(STORE_UNREADY_AFTER_MS),
      onStall: (reason) => graph.coordinator.resign(reason),
      ...(governors.configured
        ? { hold: () => ({ paused: false, resumedAtMono: governors.lastResumedMono() }) }
        : {}),
    });
  }

  /** Leading as far as anyone asking can tell: our term is running and the lease still vouches for it. */
  #leading(): boolean {
    return this.#isLeader && this.graph.coordinator.isLeader;
  }

  healthUrl(): string | undefined {
    return this.#health?.url;
  }

  status(): Record<string, unknown> {
    return {
      leader: this.#leading(),
      ready: this.#notReady === undefined,
      not_ready_reason: this.#notReady ?? null,
      coordinator: { type: this.#config.coordinate.type, holder: this.graph.coordinator.holder ?? null },
      orgs: this.graph.orgs.map((o) => ({
        name: o.org.name || "<single-org>",
        auth_failing: this.#orgsFailing.has(o.org.name),
      })),
      pipeline: this.graph.pipeline.status(),
      state: this.graph.store.location,
      checkpoint_store: this.#storeStatus(),
      watchdog: { stalled: this.#watchdog.stalled ?? null, wedged: this.#watchdog.wedged ?? null },
      egress: this.graph.governors.status(),
      ...(this.graph.destinations.length > 1 ? { loki_destinations: this.#destinationsStatus() } : {}),
      deadletter: this.graph.deadLetters?.status() ?? { enabled: false },
    };
  }

  /** Where each org's lines go, when some org has its own Loki destination (#123). */
  #destinationsStatus(): Record<string, unknown>[] {
    return this.graph.destinations.map(({ destination: d }) => ({
      destination: d.name || "<top-level>",
      orgs: d.orgs,
      url: withoutUserinfo(d.loki.url),
      tenant_id: d.loki.tenant_id ?? null,
      budget_key: d.budgetKey,
    }));
  }

  async run(signal: AbortSignal): Promise<void> {
    const stop = new AbortController();
    const onStop = (): void => {
      stop.abort();
    };
    signal.addEventListener("abort", onStop, { once: true });
    if (signal.aborted) stop.abort();
    let crash: unknown;
    const watching = this.#watchdog.run(stop.signal);
    try {
      this.#banner();
      if (!this.#deps.noHealthServer) await this.#startHealth();
      await this.#probeOrgs(stop.signal);
      if (!stop.signal.aborted) crash = await this.#lead(stop);
    } finally {
      stop.abort();
      await watching;
      signal.removeEventListener("abort", onStop);
      await this.#close();
    }
    if (crash !== undefined) throw crash instanceof Error ? crash : new Error(describeError(crash));
  }

  #banner(): void {
    const c = this.#config;
    this.#log.info(
      {
        orgs: this.graph.orgs.map((o) => o.org.name || "single"),
        topics: this.graph.orgs.flatMap((o) => streamedTopics(o.org.sources.pubsub)),
        sink: withoutUserinfo(c.sink.loki.url),
        ...(this.graph.destinations.length > 1
          ? {
              org_destinations: this.graph.destinations
                .slice(1)
                .map(
                  ({ destination: d }) =>
                    `${d.orgs.join(",")} -> ${withoutUserinfo(d.loki.url)} (tenant ${d.loki.tenant_id ?? "none"})`,
                ),
            }
          : {}),
        state: this.graph.store.location,
        coordinate: c.coordinate.type,
        health: this.#deps.healthAddr ?? c.service.health_addr,
      },
      "sf2loki starting",
    );
    logProxyAtStart(this.#log, c);
    for (const { org } of this.graph.orgs) {
      const unsalted = unsaltedHashSources(org.sources);
      if (unsalted.length > 0)
        this.#log.warn(
          { ...(org.name ? { org: org.name } : {}), sources: unsalted },
          "hash transforms run without sources.transform_salt: an unsalted SHA-256 of an email or IP is reversible by hashing candidates; set transform_salt or transform_salt_file",
        );
    }
    if (this.graph.egress)
      this.#log.info({ egress: c.sink.loki.egress }, "egress governor enforcing sink.loki.egress");
    for (const g of this.graph.governors.others)
      this.#log.info(
        { destination: g.destination?.name, orgs: g.destination?.orgs, egress: g.settings },
        "egress governor enforcing an org's own Loki destination's limits",
      );
  }

  async #startHealth(): Promise<void> {
    this.#health = await startHealthServer({
      addr: this.#deps.healthAddr ?? this.#config.service.health_addr,
      readiness: {
        notReadyReason: () => this.#notReady ?? (this.#leading() || !this.#isLeader ? undefined : "standby"),
        degradation: () => this.#degradation(),
      },
      status: () => this.status(),
      liveness: () => this.#watchdog.wedged,
      metrics: this.#metrics.handlePrometheus,
    });
    this.#log.info({ url: this.#health.url }, "health server listening");
  }

  #degradation(): string | undefined {
    const stalled = this.#watchdog.stalled;
    if (stalled !== undefined) return `not ready: watchdog: ${stalled}`;
    const store = this.#storeFailure();
    if (store !== undefined) return `not ready: checkpoint store: ${store}`;
    const paused = this.graph.governors.pausedReason;
    if (paused !== undefined) return paused;
    const failing = [...this.#orgsFailing][0];
    if (failing !== undefined) return `degraded: org ${failing} auth failing`;
    const limit = this.#config.service.unready_after_sink_failing;
    const failingSink = this.graph.pipeline.sinkFailing();
    if (limit > 0 && failingSink !== undefined) {
      const forMs = this.#clock.monotonic() - failingSink.sinceMono;
      if (forMs > limit) {
        const d = forMs >= 60_000 ? `${Math.floor(forMs / 60_000)}m` : `${Math.floor(forMs / 1000)}s`;
        // The Python text for the top-level destination; an org's own one is named (#123).
        const where = failingSink.route === "" ? "" : ` (Loki destination '${failingSink.route}')`;
        return `degraded: loki pushes failing for ${d}${where}`;
      }
    }
    return undefined;
  }

  /** `<location>: <what>` while the checkpoint store has been failing (or silent) long enough to say so. */
  #storeFailure(): string | undefined {
    const failing = this.graph.store.failing(STORE_UNREADY_AFTER_MS);
    if (!failing) return undefined;
    if (this.#clock.monotonic() - failing.sinceMono < STORE_UNREADY_AFTER_MS) return undefined;
    return `${this.graph.store.location}: ${failing.error}`;
  }

  #storeStatus(): Record<string, unknown> {
    const failing = this.graph.store.failing(STORE_UNREADY_AFTER_MS);
    if (!failing) return { ok: true };
    const forMs = this.#clock.monotonic() - failing.sinceMono;
    return {
      ok: false,
      failing_for_s: Math.round(forMs / 1000),
      failed_calls: failing.count,
      error: failing.error,
    };
  }

  /** Single-org: a failed probe aborts startup. Multi-org: starts if at least one org authenticates. */
  async #probeOrgs(stop: AbortSignal): Promise<void> {
    const results = await Promise.allSettled(this.graph.orgs.map((o) => o.auth.token()));
    const failures = results.flatMap((r, i) =>
      r.status === "rejected" ? [{ org: this.graph.orgs[i]!, err: r.reason as unknown }] : [],
    );
    if (failures.length === results.length && failures[0]) throw failures[0].err;
    for (const f of failures) {
      this.#orgsFailing.add(f.org.org.name);
      this.#log.error(
        { org: f.org.org.name, err: describeError(f.err) },
        "org failed its startup auth probe; its sources retry in the background",
      );
    }
    const loki = this.#config.sink.loki.labels;
    const base: Labels = { job: "sf2loki", service_name: "sf2loki" };
    if (this.graph.orgs.length === 1 && this.graph.orgs[0]!.org.name === "") {
      const only = this.graph.orgs[0]!;
      const orgId = await this.#resolveOrgId(only, stop);
      if (orgId === undefined) return; // stopped while waiting
      this.graph.pipeline.setStaticLabels({
        ...base,
        environment: only.org.salesforce.environment,
        sf_org_id: orgId,
        ...loki,
      });
    } else {
      this.graph.pipeline.setStaticLabels({ ...base, ...loki });
    }
  }

  /**
   * The single org's id, which its streams carry as `sf_org_id`: shipping without it would silently
   * change every stream's identity, so the daemon stays not ready and retries until it resolves (the
   * Python version exited instead). Undefined only when stopped first.
   */
  async #resolveOrgId(only: Graph["orgs"][number], stop: AbortSignal): Promise<string | undefined> {
    try {
      return await retry(() => only.auth.orgId(stop, { retryNow: true }), {
        policy: STARTUP_RETRY,
        clock: this.#clock,
        signal: stop,
        isTransient: () => true,
        onRetry: (err, attempt, delayMs) => {
          this.#notReady = `not ready: org id unresolved (${describeError(err)})`;
          this.#log.warn(
            { attempt, retry_in_ms: delayMs, err: describeError(err) },
            "org id unresolved; not shipping until it resolves, so the sf_org_id label never goes missing " +
              "(grant the 'openid' scope, or set salesforce.org_id to skip the userinfo call)",
          );
        },
      });
    } catch (err) {
      if (stop.aborted) return undefined;
      throw err;
    }
  }

  /**
   * The new term's first act, before any source starts: stamp its epoch into the checkpoint document so
   * every write the previous leader prepared fails its precondition (#17). A store that does not answer
   * is retried (readiness names it); only a newer epoch already stored ends the attempt (fenced).
   */
  async #claimTerm(term: AbortSignal): Promise<boolean> {
    try {
      await retry(() => this.graph.store.claimTerm(), {
        policy: STARTUP_RETRY,
        clock: this.#clock,
        signal: AbortSignal.any([
          term,
          ...(this.graph.coordinator.termSignal ? [this.graph.coordinator.termSignal] : []),
        ]),
        isTransient: (err) => !(err instanceof StateFenceError),
        onRetry: (err, attempt, delayMs) => {
          this.#log.warn(
            { attempt, retry_in_ms: delayMs, err: describeError(err) },
            "cannot claim the checkpoint store for this term yet; retrying before any source starts",
          );
        },
      });
      return true;
    } catch (err) {
      if (err instanceof StateFenceError) throw err;
      return false; // the term ended (or the run stopped) first
    }
  }

  /**
   * Continues the day's egress budget counts from the store (a restart, a new leader, a swapped Python
   * daemon), one per Loki destination. A store that cannot answer right after the claim is logged, not
   * fatal: the count then starts from what this process knew, and the next commit writes it back.
   */
  async #loadBudget(): Promise<void> {
    await this.graph.governors.startTerm(this.graph.store, (g, err) => {
      this.#log.warn(
        { err: describeError(err), ...(g.destination ? { destination: g.destination.name } : {}) },
        `could not read ${g.budgetKey} from the checkpoint store; counting today's bytes from what this process knew`,
      );
    });
  }

  /** Campaigns for leadership until stop; returns the crash that ended the run, if any. */
  async #lead(stop: AbortController): Promise<unknown> {
    let crash: unknown;
    let current: { abort: AbortController; done: Promise<void>; limits: Promise<void> } | undefined;

    const startRun = (): void => {
      const abort = new AbortController();
      // The org-limits pollers live for one leadership term, like the pipeline run (spec B §6.6).
      const pollers = this.graph.orgs.flatMap((o) => (o.limits ? [o.limits.run(abort.signal)] : []));
      // The dead-letter gauges and a note when letters are waiting; never rejects, ends with the term.
      const survey = this.graph.deadLetters?.survey(abort.signal);
      if (survey) pollers.push(survey);
      const limits = Promise.all(pollers).then(() => undefined);
      const run = async (): Promise<void> => {
        if (!(await this.#claimTerm(abort.signal))) return;
        await this.#loadBudget();
        await this.graph.pipeline.run(abort.signal);
        // Finished without being told to: every source was finite. A clean end of the process.
        if (!abort.signal.aborted) stop.abort();
      };
      const done = run().catch((err: unknown) => {
        if (err instanceof StateFenceError) {
          // A newer leader owns the checkpoints: demote in place and wait to lead again (#97). If the
          // lease still names us (the store saw the newer term first), hand it over explicitly.
          this.#log.warn({ err: err.message }, "fenced: another replica leads now; standing by");
          abort.abort(); // ends this term's limits pollers too
          this.#demote();
          this.graph.pipeline.resetState();
          this.graph.coordinator.resign("fenced by a newer term in the checkpoint store");
          return;
        }
        this.#log.error({ err: describeError(err) }, "pipeline crashed; stopping");
        crash = err;
        stop.abort();
      });
      current = { abort, done, limits };
    };

    const stopRun = async (): Promise<void> => {
      if (!current) return;
      current.abort.abort();
      await current.done;
      await current.limits;
      current = undefined;
    };

    if (this.#config.coordinate.type !== "noop") {
      // Campaigning: a healthy standby, not a broken replica (readiness says which).
      this.#notReady = "standby";
    }
    await this.graph.coordinator.run({
      signal: stop.signal,
      onAcquire: () => {
        this.#isLeader = true;
        this.#notReady = undefined;
        this.#log.info("leading: starting sources and pipeline");
        startRun();
        return Promise.resolve();
      },
      onLose: async (why: LossReason) => {
        if (why === "lost") {
          // Say so before draining: another replica may lead already, and the drain can take a while.
          this.#demote();
          this.#log.warn("leadership lost: standing by, then draining what this term still holds");
        } else {
          this.#log.info("stopping while leading: draining, then releasing the lease");
        }
        await stopRun();
        this.#demote();
        this.graph.pipeline.resetState();
      },
    });
    // noop returns without onLose; drain here.
    await stopRun();
    this.#isLeader = false;
    return crash;
  }

  /** Not the leader from now on, as far as anyone asking can tell (the gauge, /readyz). */
  #demote(): void {
    this.#isLeader = false;
    this.#notReady = "standby";
  }

  async #close(): Promise<void> {
    this.#notReady = "not ready";
    await closeInOrder(
      [
        ...graphCloseSteps(this.graph),
        ["health server", () => this.#health?.close() ?? Promise.resolve()],
        ["metrics", () => this.#metrics.shutdown()],
      ],
      this.#log,
    );
  }
}

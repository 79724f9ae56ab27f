// The process shell under `coordinate.sharding`: one health server, one metrics registry, one logger,
// and one ShardManager deciding which orgs this replica runs. Every org is a shard with its own graph
// (built by buildGraph from a one-org config whose state points at the shard's own document, with the
// shard's lease coordinator injected), so a shard's sources, lanes and commits start when its lease is
// won and stop when it is lost, handed over or the process stops, and no other shard notices.
// Single-lease mode never comes through here: RunningApp (app.ts) is unchanged.
import type { App, AppDeps } from "./app-types.ts";
import type { Config } from "../config/schema.ts";
import { resolvedOrgs, type ResolvedOrg } from "../config/orgs.ts";
import type { LossReason } from "../coordinate/coordinator.ts";
import { buildShardManager } from "../coordinate/sharding/build.ts";
import type { ShardManager } from "../coordinate/sharding/manager.ts";
import { BUDGET_KEY } from "../egress/budget.ts";
import { closeInOrder, graphCloseSteps } from "./close-steps.ts";
import { describeError } from "../errors.ts";
import type { Labels } from "../model.ts";
import { startHealthServer, type HealthServer } from "../obs/health.ts";
import { orgMeter } from "../obs/org-meter.ts";
import { logProxyAtStart } from "../obs/proxy-banner.ts";
import type { Logger } from "../obs/logger.ts";
import { silentLogger } from "../obs/logger.ts";
import type { Metrics } from "../obs/metrics.ts";
import { buildStore } from "../state/build.ts";
import { StateFenceError } from "../state/errors.ts";
import { shardSeed, shardStateSettings } from "../state/shard-document.ts";
import type { CheckpointStore } from "../state/store.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { retry } from "../util/retry.ts";
import { Watchdog } from "./watchdog.ts";
import { buildGraph, type Graph } from "./wiring.ts";

/** The shard name of the single org (it has no `orgs[].name`). */
export const SINGLE_ORG_SHARD = "default";

/** Backoff of a shard's term claim and org-id resolution: 1 s doubling to 60 s. */
const CLAIM_RETRY = {
  maxAttempts: Number.POSITIVE_INFINITY,
  backoffMs: (attempt: number) => Math.min(60_000, 1000 * 2 ** (attempt - 1)),
};
const STORE_UNREADY_AFTER_MS = 10_000;

interface Shard {
  name: string;
  org: ResolvedOrg;
  graph: Graph;
  /** This shard's pipeline watchdog: a stall resigns this shard's lease only. */
  watchdog: Watchdog;
  /** The running term, while this replica holds the shard. */
  term: { abort: AbortController; done: Promise<void>; limits: Promise<void> } | undefined;
}

export function shardName(org: ResolvedOrg): string {
  return org.name || SINGLE_ORG_SHARD;
}

/** The config one shard's graph is built from: only its org, and its own checkpoint document. */
export function shardConfig(config: Config, org: ResolvedOrg): Config {
  const state = shardStateSettings(config.state, shardName(org));
  if (config.orgs.length === 0) return { ...config, state };
  return { ...config, orgs: config.orgs.filter((o) => o.name === org.name), state };
}

export function createShardedApp(config: Config, deps: AppDeps, metrics: Metrics): App {
  return new ShardedApp(config, deps, metrics);
}

class ShardedApp implements App {
  readonly #config: Config;
  readonly #deps: AppDeps;
  readonly #metrics: Metrics;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #shards = new Map<string, Shard>();
  readonly #manager: ShardManager;
  /** The pre-sharding document every shard seeds from; only ever read. */
  readonly #shared: CheckpointStore;
  #health: HealthServer | undefined;
  #closing = false;

  constructor(config: Config, deps: AppDeps, metrics: Metrics) {
    this.#config = config;
    this.#deps = deps;
    this.#metrics = metrics;
    this.#clock = deps.clock ?? systemClock;
    const logger = deps.logger ?? silentLogger;
    this.#log = logger.child({ component: "app" });
    const orgs = resolvedOrgs(config);
    this.#manager = buildShardManager(
      config.coordinate,
      orgs.map((o) => shardName(o)),
      {
        clock: this.#clock,
        logger,
        meter: metrics.meter,
        epochFloor: (shard) => (_signal) => this.#shards.get(shard)!.graph.store.readFenceEpoch(),
        ...(deps.shardSpace ? { space: deps.shardSpace } : {}),
        ...(deps.host ? { host: deps.host } : {}),
      },
    );
    for (const org of orgs) {
      const name = shardName(org);
      const graph = buildGraph(shardConfig(config, org), {
        clock: this.#clock,
        logger: org.name ? logger.child({ org: org.name }) : logger,
        // Every series of a shard's graph carries `org`: each shard has its own pipeline, sink and
        // store, and two shards' gauges under one label set would overwrite each other.
        meter: orgMeter(metrics.meter, name),
        coordinator: this.#manager.coordinator(name),
        deadLetterState: config.state,
        ...(deps.sink ? { sink: deps.sink } : {}),
        ...(deps.pollOnce ? { pollOnce: true } : {}),
      });
      const wd = config.service.watchdog;
      const governors = graph.governors;
      const shard: Shard = {
        name,
        org,
        graph,
        term: undefined,
        watchdog: new Watchdog({
          stallMs: wd.stall_timeout,
          livenessMs: wd.liveness_timeout,
          clock: this.#clock,
          // Per shard, so each series carries `org`: one shard's stall is not another's.
          meter: orgMeter(metrics.meter, name),
          logger: this.#log.child({ shard: name }),
          leading: () => shard.term !== undefined && this.#manager.coordinator(name).isLeader,
          // As RunningApp: a paused destination's lanes are not work to wait on (#123).
          progress: () => graph.pipeline.progress(governors.pausedRoutes()),
          storeFailing: () => graph.store.failing(STORE_UNREADY_AFTER_MS),
          onStall: (reason) => this.#manager.coordinator(name).resign(reason),
          ...(governors.configured
            ? { hold: () => ({ paused: false, resumedAtMono: governors.lastResumedMono() }) }
            : {}),
        }),
      };
      this.#shards.set(name, shard);
    }
    this.#shared = buildStore(config.state, { exclusiveLock: false, clock: this.#clock, logger });
    // Leads anything at all: dashboards built on the single-leader gauge keep a meaning.
    metrics.meter
      .createObservableGauge("sf2loki_leader", { description: "1 while this replica leads" })
      .addCallback((r) => {
        r.observe(this.#manager.held().length > 0 ? 1 : 0);
      });
  }

  /** The first shard's graph (the App contract has one); every shard's is in `shardGraphs`. */
  get graph(): Graph {
    return this.#shards.values().next().value!.graph;
  }

  get shardGraphs(): ReadonlyMap<string, Graph> {
    return new Map([...this.#shards].map(([name, s]) => [name, s.graph]));
  }

  get manager(): ShardManager {
    return this.#manager;
  }

  healthUrl(): string | undefined {
    return this.#health?.url;
  }

  status(): Record<string, unknown> {
    const held = new Set(this.#manager.held());
    return {
      leader: held.size > 0,
      ready: this.#notReady() === undefined,
      not_ready_reason: this.#notReady() ?? null,
      coordinator: { type: this.#config.coordinate.type, sharding: true },
      sharding: this.#manager.status(),
      // Every shard writes the deployment's one dead-letter store; any shard's keeper describes it.
      deadletter: [...this.#shards.values()][0]?.graph.deadLetters?.status() ?? { enabled: false },
      orgs: [...this.#shards.values()].map((s) => ({
        name: s.org.name || "<single-org>",
        shard: s.name,
        held: held.has(s.name),
        holder: this.#manager.coordinator(s.name).holder ?? null,
        state: s.graph.store.location,
        watchdog: { stalled: s.watchdog.stalled ?? null, wedged: s.watchdog.wedged ?? null },
        ...(held.has(s.name) ? { pipeline: s.graph.pipeline.status() } : {}),
      })),
    };
  }

  #notReady(): string | undefined {
    if (this.#closing) return "not ready";
    if (this.#manager.ready()) return undefined;
    const desired = this.#manager.desired();
    const held = this.#manager.held();
    return `not ready: sharding: holding ${held.length} of the ${desired.length} shards assigned here, and some shards are unheld`;
  }

  #degradation(): string | undefined {
    for (const s of this.#shards.values()) {
      const stalled = s.watchdog.stalled;
      if (stalled !== undefined) return `not ready: watchdog: shard ${s.name}: ${stalled}`;
    }
    for (const name of this.#manager.held()) {
      const store = this.#shards.get(name)!.graph.store;
      const failing = store.failing(STORE_UNREADY_AFTER_MS);
      if (failing && this.#clock.monotonic() - failing.sinceMono >= STORE_UNREADY_AFTER_MS) {
        return `not ready: checkpoint store: ${store.location}: ${failing.error}`;
      }
    }
    return undefined;
  }

  async run(signal: AbortSignal): Promise<void> {
    const stop = new AbortController();
    const onStop = (): void => {
      stop.abort();
    };
    if (signal.aborted) stop.abort();
    else signal.addEventListener("abort", onStop, { once: true });
    let crash: unknown;
    const watching = [...this.#shards.values()].map((s) => s.watchdog.run(stop.signal));
    try {
      this.#log.info(
        {
          orgs: [...this.#shards.keys()],
          coordinate: this.#config.coordinate.type,
          replica: this.#manager.identity,
          health: this.#deps.healthAddr ?? this.#config.service.health_addr,
        },
        "sf2loki starting, orgs sharded across replicas",
      );
      logProxyAtStart(this.#log, this.#config);
      if (!this.#deps.noHealthServer) await this.#startHealth();
      await this.#manager.run({
        signal: stop.signal,
        onAcquire: (name) => {
          this.#startShard(this.#shards.get(name)!, (err) => {
            crash ??= err;
            stop.abort();
          });
          return Promise.resolve();
        },
        onLose: (name, why) => this.#stopShard(this.#shards.get(name)!, why),
      });
    } finally {
      stop.abort();
      await Promise.all(watching);
      signal.removeEventListener("abort", onStop);
      await this.#close();
    }
    if (crash !== undefined) throw crash instanceof Error ? crash : new Error(describeError(crash));
  }

  async #startHealth(): Promise<void> {
    this.#health = await startHealthServer({
      addr: this.#deps.healthAddr ?? this.#config.service.health_addr,
      readiness: { notReadyReason: () => this.#notReady(), degradation: () => this.#degradation() },
      status: () => this.status(),
      liveness: () => {
        for (const s of this.#shards.values()) {
          const wedged = s.watchdog.wedged;
          if (wedged !== undefined) return `shard ${s.name}: ${wedged}`;
        }
        return undefined;
      },
      metrics: this.#metrics.handlePrometheus,
    });
    this.#log.info({ url: this.#health.url }, "health server listening");
  }

  /** One shard's term: claim its document, seed it on first use, then run its pipeline. */
  #startShard(shard: Shard, crashed: (err: unknown) => void): void {
    const abort = new AbortController();
    const { graph } = shard;
    const log = this.#log.child({ shard: shard.name });
    const limits = Promise.all(
      graph.orgs
        .flatMap((o) => (o.limits ? [o.limits.run(abort.signal)] : []))
        // The dead-letter gauges and a note when letters are waiting; never rejects, ends with the term.
        .concat(graph.deadLetters ? [graph.deadLetters.survey(abort.signal)] : []),
    ).then(() => undefined);
    const run = async (): Promise<void> => {
      if (!(await this.#claim(shard, abort.signal, log))) return;
      await this.#seed(shard, log);
      if (!(await this.#labels(shard, abort.signal))) return;
      await graph.governors.startTerm(graph.store, (g, err) => {
        log.warn(
          { destination: g.destination?.name, err: describeError(err) },
          "could not read egress:budget for this shard; counting today's bytes from what this process knew",
        );
      });
      await graph.pipeline.run(abort.signal);
    };
    const done = run().catch((err: unknown) => {
      if (err instanceof StateFenceError) {
        log.warn({ err: err.message }, "shard fenced: another replica holds it now; standing by for it");
        abort.abort();
        graph.pipeline.resetState();
        this.#manager
          .coordinator(shard.name)
          .resign("fenced by a newer term in the shard's checkpoint document");
        return;
      }
      log.error({ err: describeError(err) }, "shard pipeline crashed; stopping");
      crashed(err);
    });
    shard.term = { abort, done, limits };
  }

  async #stopShard(shard: Shard, why: LossReason): Promise<void> {
    const log = this.#log.child({ shard: shard.name });
    if (why === "lost") log.warn("shard lost: draining what its term still holds");
    else log.info("releasing shard: draining and committing, then releasing its lease");
    const term = shard.term;
    shard.term = undefined;
    if (term) {
      term.abort.abort();
      await term.done;
      await term.limits;
    }
    shard.graph.pipeline.resetState();
  }

  /** The shard's new term stamps its own document first, so the previous holder's writes fail. */
  async #claim(shard: Shard, term: AbortSignal, log: Logger): Promise<boolean> {
    const coordinator = this.#manager.coordinator(shard.name);
    try {
      await retry(() => shard.graph.store.claimTerm(), {
        policy: CLAIM_RETRY,
        clock: this.#clock,
        signal: AbortSignal.any([term, coordinator.termSignal]),
        isTransient: (err) => !(err instanceof StateFenceError),
        onRetry: (err, attempt, delayMs) => {
          log.warn(
            { attempt, retry_in_ms: delayMs, err: describeError(err) },
            "cannot claim the shard's checkpoint document yet; retrying before its sources start",
          );
        },
      });
      return true;
    } catch (err) {
      if (err instanceof StateFenceError) throw err;
      return false;
    }
  }

  /**
   * Migration: a shard document with no checkpoints yet starts from the org's keys in the shared
   * document (read, never written). A shared document that cannot be read is logged, not fatal: the
   * sources then start from their configured windows, as on a first install.
   */
  async #seed(shard: Shard, log: Logger): Promise<void> {
    const store = shard.graph.store;
    if (Object.keys(await store.snapshot()).length > 0) return;
    let shared: Record<string, string>;
    try {
      shared = await this.#shared.snapshot();
    } catch (err) {
      log.warn(
        { err: describeError(err), shared: this.#shared.location },
        "cannot read the shared checkpoint document to seed this shard's; its sources start from their configured windows",
      );
      return;
    }
    // Egress budgets: the org's own destination's day count (`egress:budget:<org>`) comes along; the
    // deployment-wide one and other orgs' stay behind (each shard counts its own under sharding).
    const own = `${BUDGET_KEY}:${shard.org.name}`;
    const budgets = new Set(Object.keys(shared).filter((k) => k.startsWith(BUDGET_KEY) && k !== own));
    const seed = shardSeed(shared, shard.org.name, shard.org.legacyFallback, budgets);
    if (shard.org.name !== "" && shared[own] !== undefined) seed[own] = shared[own];
    if (Object.keys(seed).length === 0) return;
    await store.commitMany(seed);
    log.info(
      { keys: Object.keys(seed).length, from: this.#shared.location, to: store.location },
      "seeded the shard's checkpoint document from the shared one (left unchanged)",
    );
  }

  /** Static labels as RunningApp sets them; the single org waits for its org id (never ships without). */
  async #labels(shard: Shard, term: AbortSignal): Promise<boolean> {
    const base: Labels = { job: "sf2loki", service_name: "sf2loki" };
    const loki = this.#config.sink.loki.labels;
    const only = shard.graph.orgs[0]!;
    if (only.org.name !== "") {
      shard.graph.pipeline.setStaticLabels({ ...base, ...loki });
      return true;
    }
    try {
      const orgId = await retry(() => only.auth.orgId(term, { retryNow: true }), {
        policy: CLAIM_RETRY,
        clock: this.#clock,
        signal: term,
        isTransient: () => true,
      });
      shard.graph.pipeline.setStaticLabels({
        ...base,
        environment: only.org.salesforce.environment,
        sf_org_id: orgId,
        ...loki,
      });
      return true;
    } catch (err) {
      if (term.aborted) return false;
      throw err;
    }
  }

  async #close(): Promise<void> {
    this.#closing = true;
    await closeInOrder(
      [
        ...[...this.#shards.values()].flatMap((s) => graphCloseSteps(s.graph, s.name)),
        ["shared state store", () => this.#shared.close()],
        ["health server", () => this.#health?.close() ?? Promise.resolve()],
        ["metrics", () => this.#metrics.shutdown()],
      ],
      this.#log,
    );
  }
}

// The offline half of the composition root: one function builds the whole graph from a config with no
// network access, so `--check` and the daemon share exactly the same wiring (and the same guards:
// label allowlist, source overlap, backend settings all fail here as config errors, exit 2).
import { pubsubActive } from "../sources/pubsub/settings.ts";
import { metrics as otel, type Meter } from "@opentelemetry/api";
import type { Config } from "../config/schema.ts";
import { resolvedOrgs, type ResolvedOrg } from "../config/orgs.ts";
import { resolveDestinations, type LokiDestination } from "../config/destinations.ts";
import { buildCoordinator, type BuiltCoordinator } from "../coordinate/build.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { orgMeter } from "../obs/org-meter.ts";
import { Pipeline } from "../pipeline/pipeline.ts";
import { reconcileSettingsOf } from "../pipeline/reconcile.ts";
import { batchSettingsOf } from "../pipeline/settings.ts";
import { TokenProvider } from "../salesforce/auth.ts";
import { LimitsPoller } from "../salesforce/limits.ts";
import { salesforceDispatcher } from "../salesforce/connections.ts";
import { RestClient } from "../salesforce/rest.ts";
import type { Sink, StoredLookup } from "../sinks/sink.ts";
import { createLokiSink } from "../sinks/loki/sink.ts";
import { createOtlpSink } from "../sinks/otlp/sink.ts";
import { compileTransforms } from "../egress/transforms.ts";
import { egressConfigured, GovernedSink } from "../egress/governed-sink.ts";
import { EgressGovernors } from "../egress/governors.ts";
import { EgressMetrics, IDLE_EGRESS } from "../egress/metrics.ts";
import { ApexLogSource } from "../sources/apexlog/source.ts";
import { EventLogObjectsSource } from "../sources/eventlog-objects/source.ts";
import { EventLogFileSource } from "../sources/eventlogfile/source.ts";
import { OrgSource } from "../sources/org-source.ts";
import { UserDirectory } from "../enrich/users/directory.ts";
import { UserEnrichedSource } from "../enrich/users/source.ts";
import { queryRecentUsers, queryUsers } from "../salesforce/user-query.ts";
import { categoryOfElfType, checkOverlap, ownedCategories } from "../sources/overlap.ts";
import { PubSubSource } from "../sources/pubsub/source.ts";
import type { PollingSourceDeps } from "../sources/shaping/deps.ts";
import type { Source } from "../sources/source.ts";
import { buildStore } from "../state/build.ts";
import { buildDeadLetterStore } from "../deadletter/build.ts";
import { DeadLetterKeeper } from "../deadletter/keeper.ts";
import { TrackedStore } from "../state/tracked-store.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { readTlsFiles } from "../util/tls-files.ts";

export interface WiringDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Replaces the top-level destination's Loki sink (tests); the real one is built from `sink.loki`. */
  sink?: Sink;
  /** Replaces the configured coordinator (tests drive leadership by hand); fence wiring still applies. */
  coordinator?: BuiltCoordinator;
  /**
   * Where dead letters live when it is not next to `config.state`: a shard's graph writes its own
   * checkpoint document but the deployment's one dead-letter store, the one `sf2loki deadletter` reads.
   */
  deadLetterState?: Config["state"];
  /**
   * Polling sources run one cycle and end (tests, benchmarks, one-shot catch-ups). With no Pub/Sub
   * topic configured the pipeline run then ends on its own: a clean finite run.
   */
  pollOnce?: boolean;
}

export interface OrgWiring {
  org: ResolvedOrg;
  auth: TokenProvider;
  /** The org's one REST client, shared by its polling sources and limits poller; the app closes it. */
  rest: RestClient;
  /** Present when `salesforce.limits.enabled`; the app runs it while leading. */
  limits: LimitsPoller | undefined;
  sources: Source[];
}

interface Common {
  clock: Clock;
  logger: Logger;
  meter: Meter;
}

/** One Loki destination: its own sink (connection pool) and egress governor (#123). */
export interface DestinationWiring {
  destination: LokiDestination;
  /** What its lanes push through: the governor when it has one, else the Loki sink. */
  sink: Sink;
  egress: GovernedSink | undefined;
  /** Loki's read path with the destination's tenant and credentials (`sink.loki.reconcile`). */
  lookup: StoredLookup | undefined;
}

export interface Graph {
  config: Config;
  orgs: OrgWiring[];
  /** The top-level `sink.loki` destination's sink (`destinations[0].sink`). */
  sink: Sink;
  /** The egress governor around the sink (`sink` is it), when any `sink.loki.egress` limit is set. */
  egress: GovernedSink | undefined;
  /** Every destination, the top-level one first; orgs' own ones after it, in config order. */
  destinations: DestinationWiring[];
  /** Every destination's governor, as the app sees them. */
  governors: EgressGovernors;
  /** The configured store, tracked: readiness and the watchdog ask it whether the backend answers. */
  store: TrackedStore;
  coordinator: BuiltCoordinator;
  pipeline: Pipeline;
  /** Keeps what Loki refuses for good (`deadletter.enabled`); its `store` is what the CLI reads. */
  deadLetters: DeadLetterKeeper | undefined;
}

export function buildGraph(config: Config, deps: WiringDeps = {}): Graph {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const meter = deps.meter ?? otel.getMeter("sf2loki");
  const common = { clock, logger, meter };
  const loki = config.sink.loki;

  // One governor per Loki destination, between the lanes and the sink: the daemon and backfill both
  // push through a destination's `sink`, so both are governed with no second data path.
  const egressMetrics = new EgressMetrics(meter);
  const destinations = resolveDestinations(config).map((d) =>
    wireDestination(config.sink.type, d, deps, common, egressMetrics),
  );
  const main = destinations[0]!;
  const { sink, egress } = main;
  if (!egress) egressMetrics.add(IDLE_EGRESS);
  const governors = new EgressGovernors(
    egress,
    destinations.slice(1).flatMap((d) => (d.egress ? [d.egress] : [])),
  );
  const store = new TrackedStore(
    buildStore(config.state, { exclusiveLock: config.coordinate.type === "noop", clock, logger }),
    { meter, clock },
  );
  const coordinator =
    deps.coordinator ??
    buildCoordinator(config.coordinate, {
      clock,
      logger,
      epochFloor: () => store.readFenceEpoch(),
    });
  if (config.coordinate.type !== "noop" || deps.coordinator) {
    // Checked before every write attempt; the epoch is stamped into the document and refuses a write
    // over a newer term's; the term signal aborts a write still in flight when leadership ends (#17).
    store.setFence({
      check: () => coordinator.checkFence(),
      epoch: () => coordinator.epoch,
      signal: () => coordinator.termSignal,
    });
  }

  // Dead letters follow the checkpoints: same backend, same credentials, same fence (only the leader writes).
  const deadLetters = config.deadletter.enabled
    ? new DeadLetterKeeper({
        store: buildDeadLetterStore(deps.deadLetterState ?? config.state, config.deadletter, clock),
        ...common,
        ...(config.coordinate.type !== "noop" || deps.coordinator
          ? { fence: () => coordinator.checkFence() }
          : {}),
      })
    : undefined;

  const pollOnce = deps.pollOnce ?? false;
  const orgs = resolvedOrgs(config).map((org) => wireOrg(config, org, common, pollOnce));
  const sourcesOf = (d: DestinationWiring): Source[] =>
    orgs.filter((o) => d.destination.orgs.includes(o.org.name)).flatMap((o) => o.sources);
  const pipeline = new Pipeline({
    sources: sourcesOf(main),
    sink,
    // An org's own destination gets lanes of its own (see PipelineRoute): its pause or outage holds
    // only its own orgs' pushes and checkpoints.
    routes: destinations.slice(1).map((d) => ({
      name: d.destination.name,
      sources: sourcesOf(d),
      sink: d.sink,
      ...(d.lookup ? { lookup: d.lookup } : {}),
    })),
    ...(main.lookup ? { lookup: main.lookup } : {}),
    reconcile: reconcileSettingsOf(loki.reconcile),
    // The budget counters are written with the checkpoint commits (one write, one writer).
    store: governors.bind(store),
    batch: batchSettingsOf(loki),
    shutdown_grace_ms: config.service.shutdown_grace,
    ...(deadLetters ? { deadLetters } : {}),
    ...common,
  });
  return { config, orgs, sink, egress, destinations, governors, store, coordinator, pipeline, deadLetters };
}

/**
 * The destination's sink by `sink.type`. OTLP takes its transport from `sink.otlp` and what shapes a
 * batch (the line cap, Loki's limits) from `sink.loki`, as the pipeline does its batching.
 */
function buildSink(type: Config["sink"]["type"], destination: LokiDestination, own: Common): Sink {
  const deps = { ...own, configKey: destination.where };
  if (type === "loki") return createLokiSink(destination.loki, deps);
  const { otlp, loki } = destination;
  return createOtlpSink(
    {
      ...otlp,
      url: otlp.url ?? "",
      batch: { max_line_bytes: loki.batch.max_line_bytes },
      limits: loki.limits,
      reconcile: loki.reconcile,
    },
    deps,
  );
}

function wireDestination(
  type: Config["sink"]["type"],
  destination: LokiDestination,
  deps: WiringDeps,
  common: Common,
  metrics: EgressMetrics,
): DestinationWiring {
  const main = destination.name === "";
  const own: Common = main
    ? common
    : { ...common, logger: common.logger.child({ destination: destination.name }) };
  // Its messages name the keys to fix: `orgs[<org>].sink.loki.url`, not the top-level one.
  const built = (): Sink => buildSink(type, destination, own);
  const inner = main ? (deps.sink ?? built()) : built();
  const settings = destination.loki.egress;
  const egress = egressConfigured(settings)
    ? new GovernedSink(inner, settings, {
        ...own,
        metrics,
        ...(main
          ? {}
          : {
              destination: {
                name: destination.name,
                budgetKey: destination.budgetKey,
                orgs: destination.orgs,
              },
            }),
      })
    : undefined;
  // The lookup bypasses the governor: a query is no egress of log data.
  const lookup = (inner as Partial<{ lookup: StoredLookup }>).lookup;
  return { destination, sink: egress ?? inner, egress, lookup };
}

function wireOrg(config: Config, org: ResolvedOrg, common: Common, pollOnce: boolean): OrgWiring {
  const sources = org.sources;
  checkOverlap(sources, org.name);
  const orgLogger = org.name ? common.logger.child({ org: org.name }) : common.logger;
  // Under multi-org every per-org metric carries `org` (Python's Metrics.for_org).
  const own: Common = org.name ? { ...common, meter: orgMeter(common.meter, org.name) } : common;
  // The org's connections, shared by its token provider, REST client and topic discovery; closed with
  // the REST client. A bad `salesforce.tls` file fails here, so `--check` names it too.
  const http = salesforceDispatcher(
    readTlsFiles(org.salesforce.tls, org.name ? `orgs[${org.name}].salesforce.tls` : "salesforce.tls"),
  );
  const auth = new TokenProvider({ settings: org.salesforce, orgName: org.name, ...own, dispatcher: http });
  const rest = new RestClient({
    tokens: auth,
    apiVersion: org.salesforce.api_version,
    ...own,
    logger: orgLogger,
    dispatcher: http,
    closesDispatcher: true,
  });
  const identity = {
    name: org.name,
    environment: org.salesforce.environment,
    ...(org.salesforce.org_id ? { orgId: org.salesforce.org_id } : {}),
  };
  const fields = config.sink.loki.structured_metadata_fields;
  const inner: Source[] = [];
  if (pubsubActive(sources.pubsub)) {
    const rules = compileTransforms(sources.pubsub.transforms, {
      source: "pubsub",
      salt: sources.transform_salt,
      meter: own.meter,
    });
    inner.push(
      new PubSubSource({
        settings: sources.pubsub,
        auth,
        org: identity,
        apiVersion: org.salesforce.api_version,
        http,
        ownedCategories: ownedCategories(sources, "pubsub"),
        structuredMetadataFields: fields,
        ...(rules.empty ? {} : { transform: (payload) => rules.apply(payload) }),
        ...own,
      }),
    );
  }
  const polling: PollingSourceDeps = {
    tokens: auth,
    rest,
    apiVersion: org.salesforce.api_version,
    structuredMetadataFields: fields,
    transformSalt: sources.transform_salt,
    once: pollOnce,
    ...own,
    logger: orgLogger,
  };
  if (sources.eventlog_objects.enabled && sources.eventlog_objects.objects.length > 0) {
    inner.push(new EventLogObjectsSource({ settings: sources.eventlog_objects, ...polling }));
  }
  if (sources.eventlogfile.enabled) {
    const owned = ownedCategories(sources, "eventlogfile");
    inner.push(
      new EventLogFileSource({
        settings: sources.eventlogfile,
        ownedElsewhere: (eventType) => owned.has(categoryOfElfType(eventType)),
        ...polling,
      }),
    );
  }
  if (sources.apexlog.enabled) inner.push(new ApexLogSource({ settings: sources.apexlog, ...polling }));

  const limitsSettings = org.salesforce.limits;
  const limits = limitsSettings.enabled
    ? new LimitsPoller({
        rest,
        pollIntervalMs: limitsSettings.poll_interval,
        ...common,
        logger: orgLogger,
        ...(org.name ? { attributes: { org: org.name } } : {}),
      })
    : undefined;

  // One directory per org, shared by its sources: one cache, one query budget, one loop.
  const users = config.enrich.users.enabled
    ? new UserDirectory({
        settings: config.enrich.users,
        lookup: {
          byIds: (ids, signal) => queryUsers(rest, ids, signal),
          recent: (limit, signal) => queryRecentUsers(rest, limit, signal),
        },
        ...own,
        logger: orgLogger,
      })
    : undefined;
  const wrapped = inner.map(
    (source) =>
      new OrgSource({
        inner: users ? new UserEnrichedSource(source, users) : source,
        org: { name: org.name, environment: org.salesforce.environment },
        orgId: () => auth.orgId(),
        firstOrg: org.legacyFallback,
        ...common,
      }),
  );
  return { org, auth, rest, limits, sources: wrapped };
}

/**
 * `--check`: the whole graph, built and thrown away; nothing was opened (a REST client's pool opens
 * sockets only on its first request), so nothing to close.
 */
export function buildOffline(config: Config): Promise<Graph> {
  return Promise.resolve(buildGraph(config));
}

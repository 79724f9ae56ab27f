// The offline half of the composition root: one function builds the whole graph from a config with no
// network access, so `--check` and the daemon share exactly the same wiring (and the same guards:
// label allowlist, source overlap, backend settings all fail here as config errors, exit 2).
import { metrics as otel, type Meter } from "@opentelemetry/api";
import type { Config } from "./config/schema.ts";
import { resolvedOrgs, type ResolvedOrg } from "./config/orgs.ts";
import { buildCoordinator, type BuiltCoordinator } from "./coordinate/build.ts";
import { silentLogger, type Logger } from "./obs/logger.ts";
import { orgMeter } from "./obs/org-meter.ts";
import { Pipeline } from "./pipeline/pipeline.ts";
import { TokenProvider } from "./salesforce/auth.ts";
import { LimitsPoller } from "./salesforce/limits.ts";
import { RestClient } from "./salesforce/rest.ts";
import type { Sink } from "./sinks/sink.ts";
import { createLokiSink } from "./sinks/loki/sink.ts";
import { compileTransforms } from "./egress/transforms.ts";
import { egressConfigured, GovernedSink } from "./egress/governed-sink.ts";
import { idleEgressMetrics } from "./egress/metrics.ts";
import { ApexLogSource } from "./sources/apexlog/source.ts";
import { EventLogObjectsSource } from "./sources/eventlog-objects/source.ts";
import { EventLogFileSource } from "./sources/eventlogfile/source.ts";
import { OrgSource } from "./sources/org-source.ts";
import { categoryOfElfType, checkOverlap, ownedCategories } from "./sources/overlap.ts";
import { PubSubSource } from "./sources/pubsub/source.ts";
import type { PollingSourceDeps } from "./sources/shaping/deps.ts";
import type { Source } from "./sources/source.ts";
import { buildStore } from "./state/build.ts";
import { TrackedStore } from "./state/tracked-store.ts";
import { systemClock, type Clock } from "./util/clock.ts";

export interface WiringDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Replaces the Loki sink (tests); the real one is built from `sink.loki`. */
  sink?: Sink;
  /** Replaces the configured coordinator (tests drive leadership by hand); fence wiring still applies. */
  coordinator?: BuiltCoordinator;
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

export interface Graph {
  config: Config;
  orgs: OrgWiring[];
  sink: Sink;
  /** The egress governor around the sink (`sink` is it), when any `sink.loki.egress` limit is set. */
  egress: GovernedSink | undefined;
  /** The configured store, tracked: readiness and the watchdog ask it whether the backend answers. */
  store: TrackedStore;
  coordinator: BuiltCoordinator;
  pipeline: Pipeline;
}

export function buildGraph(config: Config, deps: WiringDeps = {}): Graph {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const meter = deps.meter ?? otel.getMeter("sf2loki");
  const common = { clock, logger, meter };
  const loki = config.sink.loki;

  // One governor per Loki destination, between the lanes and the sink: the daemon and backfill both
  // push through `sink`, so both are governed with no second data path.
  const inner = deps.sink ?? createLokiSink(loki, common);
  const egress = egressConfigured(loki.egress) ? new GovernedSink(inner, loki.egress, common) : undefined;
  const sink = egress ?? inner;
  if (!egress) idleEgressMetrics(meter);
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

  const pollOnce = deps.pollOnce ?? false;
  const orgs = resolvedOrgs(config).map((org) => wireOrg(config, org, common, pollOnce));
  const pipeline = new Pipeline({
    sources: orgs.flatMap((o) => o.sources),
    sink,
    // The budget counter is written with the checkpoint commits (one write, one writer).
    store: egress ? egress.bind(store) : store,
    batch: { ...loki.batch, flush_interval_ms: loki.batch.flush_interval },
    shutdown_grace_ms: config.service.shutdown_grace,
    ...common,
  });
  return { config, orgs, sink, egress, store, coordinator, pipeline };
}

function wireOrg(config: Config, org: ResolvedOrg, common: Common, pollOnce: boolean): OrgWiring {
  const sources = org.sources;
  checkOverlap(sources, org.name);
  const orgLogger = org.name ? common.logger.child({ org: org.name }) : common.logger;
  // Under multi-org every per-org metric carries `org` (Python's Metrics.for_org).
  const own: Common = org.name ? { ...common, meter: orgMeter(common.meter, org.name) } : common;
  const auth = new TokenProvider({ settings: org.salesforce, orgName: org.name, ...own });
  const rest = new RestClient({
    tokens: auth,
    apiVersion: org.salesforce.api_version,
    ...own,
    logger: orgLogger,
  });
  const identity = {
    name: org.name,
    environment: org.salesforce.environment,
    ...(org.salesforce.org_id ? { orgId: org.salesforce.org_id } : {}),
  };
  const fields = config.sink.loki.structured_metadata_fields;
  const inner: Source[] = [];
  if (sources.pubsub.enabled && sources.pubsub.topics.length > 0) {
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

  const wrapped = inner.map(
    (source) =>
      new OrgSource({
        inner: source,
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

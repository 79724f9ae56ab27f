// The offline half of the composition root: one function builds the whole graph from a config with no
// network access, so `--check` and the daemon share exactly the same wiring (and the same guards:
// label allowlist, source overlap, backend settings all fail here as config errors, exit 2).
import { metrics as otel, type Meter } from "@opentelemetry/api";
import type { Config } from "./config/schema.ts";
import { resolvedOrgs, type ResolvedOrg } from "./config/orgs.ts";
import { buildCoordinator, type BuiltCoordinator } from "./coordinate/build.ts";
import { silentLogger, type Logger } from "./obs/logger.ts";
import { Pipeline } from "./pipeline/pipeline.ts";
import { TokenProvider } from "./salesforce/auth.ts";
import type { Sink } from "./sinks/sink.ts";
import { createLokiSink } from "./sinks/loki/sink.ts";
import { OrgSource } from "./sources/org-source.ts";
import { checkOverlap, ownedCategories } from "./sources/overlap.ts";
import { PubSubSource } from "./sources/pubsub.ts";
import type { Source } from "./sources/source.ts";
import { buildStore } from "./state/build.ts";
import { isEpochCapable } from "./state/org-view.ts";
import type { CheckpointStore } from "./state/store.ts";
import { systemClock, type Clock } from "./util/clock.ts";

export interface WiringDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Replaces the Loki sink (tests); the real one is built from `sink.loki`. */
  sink?: Sink;
}

export interface OrgWiring {
  org: ResolvedOrg;
  auth: TokenProvider;
  sources: Source[];
}

export interface Graph {
  config: Config;
  orgs: OrgWiring[];
  sink: Sink;
  store: CheckpointStore;
  coordinator: BuiltCoordinator;
  pipeline: Pipeline;
}

export function buildGraph(config: Config, deps: WiringDeps = {}): Graph {
  const clock = deps.clock ?? systemClock;
  const logger = deps.logger ?? silentLogger;
  const meter = deps.meter ?? otel.getMeter("sf2loki");
  const common = { clock, logger, meter };
  const loki = config.sink.loki;

  const sink = deps.sink ?? createLokiSink(loki, common);
  const store = buildStore(config.state, { exclusiveLock: config.coordinate.type === "noop", clock, logger });
  const coordinator = buildCoordinator(config.coordinate, { clock, logger });
  if (config.coordinate.type !== "noop") {
    // The fence runs before every commit; the epoch catches a stale leader at write time.
    store.setFence(() => coordinator.checkFence());
    if (isEpochCapable(store)) store.setEpoch(() => coordinator.epoch);
  }

  const orgs = resolvedOrgs(config).map((org) => wireOrg(config, org, common));
  const pipeline = new Pipeline({
    sources: orgs.flatMap((o) => o.sources),
    sink,
    store,
    batch: { ...loki.batch, flush_interval_ms: loki.batch.flush_interval },
    shutdown_grace_ms: config.service.shutdown_grace,
    ...common,
  });
  return { config, orgs, sink, store, coordinator, pipeline };
}

function wireOrg(
  config: Config,
  org: ResolvedOrg,
  common: { clock: Clock; logger: Logger; meter: Meter },
): OrgWiring {
  const sources = org.sources;
  checkOverlap(sources, org.name);
  const auth = new TokenProvider({ settings: org.salesforce, orgName: org.name, ...common });
  const identity = {
    name: org.name,
    environment: org.salesforce.environment,
    ...(org.salesforce.org_id ? { orgId: org.salesforce.org_id } : {}),
  };
  const inner: Source[] = [];
  if (sources.pubsub.enabled && sources.pubsub.topics.length > 0) {
    inner.push(
      new PubSubSource({
        settings: sources.pubsub,
        auth,
        org: identity,
        apiVersion: org.salesforce.api_version,
        ownedCategories: ownedCategories(sources, "pubsub"),
        structuredMetadataFields: config.sink.loki.structured_metadata_fields,
        ...common,
      }),
    );
  }
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
  return { org, auth, sources: wrapped };
}

/** `--check`: the whole graph, built and thrown away; nothing was opened, so nothing to close. */
export function buildOffline(config: Config): Promise<Graph> {
  return Promise.resolve(buildGraph(config));
}

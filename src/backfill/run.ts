// `sf2loki backfill`: historical EventLogFiles (and, with --objects, SOQL-polled event objects) into
// Loki through the daemon's own data path: the org's REST client and shaping, the real Pipeline
// (bounded queue, batcher, push with the sink's retry and bisection, ordered commit) and the real
// Loki sink, with checkpoints in the configured store under `backfill:*` keys only.
import { resolvedOrgs, selectOrg, type ResolvedOrg } from "../config/orgs.ts";
import type { Config } from "../config/schema.ts";
import type { Labels } from "../model.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import type { DeadLetterSink } from "../pipeline/dead-letters.ts";
import { Pipeline } from "../pipeline/pipeline.ts";
import { reconcileSettingsOf } from "../pipeline/reconcile.ts";
import { batchSettingsOf } from "../pipeline/settings.ts";
import type { StoredLookup } from "../sinks/sink.ts";
import { EventLogFileClient } from "../salesforce/eventlogfile/client.ts";
import { pollingKit } from "../sources/shaping/deps.ts";
import { eachEntry, type Source } from "../sources/source.ts";
import type { CheckpointStore } from "../state/store.ts";
import type { Clock } from "../util/clock.ts";
import { buildGraph, type OrgWiring } from "../daemon/wiring.ts";
import { BackfillKeys, type BackfillContext, type BackfillStats } from "./context.ts";
import { CountingSink } from "./counting-sink.ts";
import { EntryDecorator } from "./decorate.ts";
import { BackfillElfSource } from "./elf-source.ts";
import { objectsSource } from "./objects-source.ts";
import type { BackfillPlan } from "./options.ts";
import { BackfillProgress } from "./progress.ts";
import { buildStore } from "../state/build.ts";
import { backfillStateSettings, buildBackfillStore } from "./store.ts";
import { resolveTypes } from "./types.ts";

const DAY_MS = 86_400_000;
/** ELF retention with the Event Monitoring add-on; the free tier keeps one day. */
const RETENTION_DAYS = 30;
/** Loki's default reject_old_samples_max_age (168h). */
const REJECT_OLD_DAYS = 7;
/** A Loki that has refused every push this long ends the run (exit 1); a rerun resumes. */
export const PUSH_FAILURE_ABORT_MS = 300_000;

export interface BackfillIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  isTTY: boolean;
}

export interface BackfillRun {
  config: Config;
  plan: BackfillPlan;
  io: BackfillIO;
  clock: Clock;
  signal: AbortSignal;
  logger?: Logger;
  /** How long every push may fail before the run gives up (tests shorten it). */
  pushFailureAbortMs?: number;
}

export type BackfillOutcome = "ok" | "push-failed";

export async function runBackfill(run: BackfillRun): Promise<BackfillOutcome> {
  const { config, plan, io, clock } = run;
  const report = (line: string): void => {
    io.stderr(`sf2loki backfill: ${line}\n`);
  };
  const org = chooseOrg(config, plan, report);
  warnAge(plan, clock, report);
  const graph = buildGraph(config, { clock, logger: run.logger ?? silentLogger });
  const wiring = graph.orgs.find((o) => o.org.name === org.name)!;
  // The org's own Loki destination when it has one (#123): the daemon would send its lines there too.
  const destination = graph.destinations.find((d) => d.destination.orgs.includes(org.name))!;
  const sink = new CountingSink(destination.sink);
  const store = plan.dryRun ? undefined : backfillStore(config, clock, report);
  const started = clock.monotonic();
  const stats: BackfillStats = { files: 0, downloads: 0, listCalls: 0, failedTypes: 0 };
  const progress = new BackfillProgress({ clock, write: io.stderr, tty: io.isTTY });
  let outcome: BackfillOutcome = "ok";
  try {
    // Credentials first: an AuthError is one line and exit 1, not one failed listing per type.
    await wiring.auth.token(run.signal);
    const labels = await identityLabels(config, org, wiring);
    const context = buildContext(run, org, wiring, labels.entry, progress, stats, report);
    const sources = await buildSources(context, wiring, org, run.signal);
    progress.start();
    if (plan.dryRun) await dryRun(sources, sink, config, clock, run.signal);
    else {
      // The destination's egress governor is its sink itself (rate caps, budget). The budget count of a
      // backfill lives in the backfill document: the daemon's document has one writer, the daemon.
      const egress = destination.egress;
      await egress?.startTerm(store!);
      const governed = egress ? egress.bind(store!) : store!;
      // Rows Loki refuses for good are kept like the daemon's, in the same dead-letter store.
      outcome = await deliver(
        run,
        sources,
        sink,
        governed,
        labels.static,
        graph.deadLetters?.unfenced(),
        destination.lookup,
      );
    }
  } finally {
    progress.stop();
    await Promise.allSettled([
      ...graph.destinations.map((d) => d.sink.close()),
      wiring.rest.close(),
      store?.close(),
      graph.store.close(),
      graph.deadLetters?.store.close(),
    ]);
  }
  const elapsed = ((clock.monotonic() - started) / 1000).toFixed(1);
  io.stdout(
    `sf2loki backfill summary: files=${stats.files} rows_pushed=${sink.rowsPushed} rows_dropped=${sink.rowsDropped} ` +
      `bytes_pushed=${sink.bytesPushed} api_calls=${stats.downloads} elapsed=${elapsed}s${plan.dryRun ? " (dry run: nothing pushed, nothing committed)" : ""}\n`,
  );
  return outcome;
}

function chooseOrg(config: Config, plan: BackfillPlan, report: (line: string) => void): ResolvedOrg {
  if (config.orgs.length === 0) {
    if (plan.org !== undefined) report(`single-org config: --org '${plan.org}' ignored`);
    return resolvedOrgs(config)[0]!;
  }
  const org = selectOrg(config, plan.org);
  if (config.orgs.length > 1 && plan.org === undefined) {
    report(`multiple orgs are configured; backfilling org '${org.name}' only (use --org to choose another)`);
  }
  return org;
}

function warnAge(plan: BackfillPlan, clock: Clock, report: (line: string) => void): void {
  const days = (clock.now() - plan.sinceMs) / DAY_MS;
  if (days > RETENTION_DAYS) {
    report(
      `--since is ${Math.floor(days)} days ago, past EventLogFile retention (${RETENTION_DAYS} days with Event Monitoring, 1 day on the free tier); older files no longer exist`,
    );
  }
  if (days > REJECT_OLD_DAYS && !plan.ingestTimestamps) {
    report(
      `--since is ${Math.floor(days)} days ago: Loki rejects samples older than reject_old_samples_max_age (default 168h); raise it (limits_config) or use --ingest-timestamps`,
    );
  }
}

function backfillStore(config: Config, clock: Clock, report: (line: string) => void): CheckpointStore {
  const store = buildBackfillStore(config.state, clock);
  if (config.coordinate.type !== "noop") {
    report(
      `coordinate.type is '${config.coordinate.type}': backfill takes no lease; its checkpoints are in ${store.location}, apart from the leader's`,
    );
  }
  return store;
}

/** The daemon's identity labels (app.ts): static for a single org, per entry for a named org. */
async function identityLabels(
  config: Config,
  org: ResolvedOrg,
  wiring: OrgWiring,
): Promise<{ static: Labels; entry: Labels }> {
  const base: Labels = { job: "sf2loki", service_name: "sf2loki" };
  // Like the daemon (#10): never ship without sf_org_id; an unresolved org id ends the run (exit 1).
  const orgId = await wiring.auth.orgId();
  const identity: Labels = { environment: org.salesforce.environment, sf_org_id: orgId };
  if (org.name === "") return { static: { ...base, ...identity, ...config.sink.loki.labels }, entry: {} };
  return { static: { ...base, ...config.sink.loki.labels }, entry: { org: org.name, ...identity } };
}

function buildContext(
  run: BackfillRun,
  org: ResolvedOrg,
  wiring: OrgWiring,
  entryLabels: Labels,
  progress: BackfillProgress,
  stats: BackfillStats,
  report: (line: string) => void,
): BackfillContext {
  const elf = org.sources.eventlogfile;
  const kit = pollingKit(
    {
      tokens: wiring.auth,
      rest: wiring.rest,
      apiVersion: org.salesforce.api_version,
      structuredMetadataFields: run.config.sink.loki.structured_metadata_fields,
      transformSalt: org.sources.transform_salt,
      clock: run.clock,
      logger: run.logger ?? silentLogger,
    },
    "eventlogfile",
    elf.transforms,
  );
  return {
    plan: run.plan,
    elf,
    shaper: kit.shaper,
    transforms: kit.transforms,
    globalFields: kit.globalFields,
    clock: run.clock,
    log: kit.log,
    keys: new BackfillKeys(org.name, run.plan.interval, org.legacyFallback),
    decorate: new EntryDecorator({
      entryLabels,
      ingestTimestamps: run.plan.ingestTimestamps,
      nowMs: run.clock.now(),
    }),
    progress,
    stats,
    report,
    ...(run.plan.dryRun
      ? {
          onListed: (type, files) => {
            for (const f of files) {
              run.io.stdout(`dry-run: ${type} ${f.id} created=${f.createdDate} size=${f.logFileLength}\n`);
            }
          },
        }
      : {}),
  };
}

async function buildSources(
  c: BackfillContext,
  wiring: OrgWiring,
  org: ResolvedOrg,
  signal: AbortSignal,
): Promise<Source[]> {
  const sources: Source[] = [];
  const client = new EventLogFileClient({ rest: wiring.rest, clock: c.clock });
  const onlyObjects = c.plan.objects.length > 0 && c.plan.eventTypes === undefined && !c.plan.discover;
  if (!onlyObjects) {
    const types = await resolveTypes(c, client, org.sources.eventlogfile, signal);
    if (types.length > 0) sources.push(new BackfillElfSource(c, client, types));
  }
  if (c.plan.objects.length > 0) sources.push(objectsSource(c, wiring, org));
  return sources;
}

async function dryRun(
  sources: Source[],
  sink: CountingSink,
  config: Config,
  clock: Clock,
  signal: AbortSignal,
): Promise<void> {
  // Where a real run would resume (read without the lock, never written); everything from there is
  // downloaded and shaped, so the counts are what a real run would push. No sink call.
  const reader = buildStore(backfillStateSettings(config.state), { exclusiveLock: false, clock });
  try {
    for (const source of sources) {
      for await (const e of eachEntry(source.events(reader, signal))) {
        if (e.checkpointOnly) continue;
        sink.rowsPushed++;
        sink.bytesPushed += e.lineBytes;
      }
    }
  } finally {
    await reader.close();
  }
}

async function deliver(
  run: BackfillRun,
  sources: Source[],
  sink: CountingSink,
  store: CheckpointStore,
  staticLabels: Labels,
  deadLetters: DeadLetterSink | undefined,
  // A resumed backfill looks up what its last run may have pushed, like the daemon (#27).
  lookup: StoredLookup | undefined,
): Promise<BackfillOutcome> {
  const loki = run.config.sink.loki;
  const pipeline = new Pipeline({
    sources,
    sink,
    store,
    ...(deadLetters ? { deadLetters } : {}),
    batch: batchSettingsOf(loki),
    shutdown_grace_ms: run.config.service.shutdown_grace,
    ...(lookup ? { lookup } : {}),
    reconcile: reconcileSettingsOf(loki.reconcile),
    clock: run.clock,
    logger: run.logger ?? silentLogger,
    staticLabels,
  });
  const stop = new AbortController();
  const onAbort = (): void => {
    stop.abort();
  };
  run.signal.addEventListener("abort", onAbort, { once: true });
  const watch = { pushFailed: false };
  // The pipeline retries a failing Loki forever (right for a daemon); a one-shot run gives up.
  const abortAfter = run.pushFailureAbortMs ?? PUSH_FAILURE_ABORT_MS;
  const watchdog = setInterval(
    () => {
      const since = pipeline.sinkFailingSince();
      if (since !== undefined && run.clock.monotonic() - since > abortAfter) {
        watch.pushFailed = true;
        stop.abort();
      }
    },
    Math.min(1_000, abortAfter),
  );
  watchdog.unref();
  try {
    await pipeline.run(stop.signal);
  } finally {
    clearInterval(watchdog);
    run.signal.removeEventListener("abort", onAbort);
  }
  if (watch.pushFailed) {
    run.io.stderr(
      `sf2loki backfill: aborting: every Loki push failed for ${abortAfter / 1000}s; fix Loki and rerun the same command to resume\n`,
    );
    return "push-failed";
  }
  return "ok";
}

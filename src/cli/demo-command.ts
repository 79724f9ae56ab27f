// `sf2loki demo`: a simulated org and Loki receiver plus the real daemon, in one process, on a
// temporary file store. No credentials, no network beyond loopback. Ends with what arrived where.
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Command } from "commander";
import { validateConfig } from "../config/load.ts";
import { createLogger } from "../obs/logger.ts";
import { EXIT_FAILURE, EXIT_OK, reportError, type CliIO } from "./exit.ts";
import { VERSION } from "./version.ts";
import { UsageError } from "./config-command.ts";
import { demoOrgId, demoPushUrl, lokiReadBack, type LokiReadBack } from "./demo-loki.ts";

interface DemoOptions {
  events: string;
  duration: string;
  seed: string;
  json?: boolean;
  lokiUrl?: string;
  tenantId?: string;
  managed?: boolean;
}

/** A Loki of the operator's own, instead of the built-in receiver. */
interface OwnLoki {
  pushUrl: string;
  tenantId: string | undefined;
}

export function positiveInt(text: string, flag: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n <= 0)
    throw new UsageError(`${flag} must be a positive whole number, got '${text}'`);
  return n;
}

export function demoCommand(io: CliIO, setExit: (code: number) => void): Command {
  return new Command("demo")
    .description(
      "run sf2loki against a simulated org and Loki receiver (no credentials), then print a summary",
    )
    .option("--events <n>", "events per topic", "2000")
    .option("--duration <seconds>", "stop after this long even if not everything arrived", "30")
    .option("--seed <n>", "event generator seed", "1")
    .option("--json", "print the summary as JSON")
    .option(
      "--loki-url <url>",
      "push into this Loki (its base URL or push URL) and count the events back through LogQL",
    )
    .option("--tenant-id <tenant>", "with --loki-url: the X-Scope-OrgID to push and query as")
    .option(
      "--managed",
      "stream through managed event subscriptions (ManagedSubscribe): the simulated org keeps the replay, sf2loki commits it",
    )
    .action(async (opts: DemoOptions) => {
      const events = positiveInt(opts.events, "--events");
      const durationMs = positiveInt(opts.duration, "--duration") * 1000;
      if (opts.tenantId !== undefined && opts.lokiUrl === undefined) {
        throw new UsageError("--tenant-id needs --loki-url (the built-in receiver takes any tenant)");
      }
      let own: OwnLoki | undefined;
      if (opts.lokiUrl !== undefined) {
        try {
          own = { pushUrl: demoPushUrl(opts.lokiUrl), tenantId: opts.tenantId };
        } catch (err) {
          throw new UsageError((err as Error).message);
        }
      }
      setExit(
        await runDemo(io, {
          events,
          durationMs,
          seed: positiveInt(opts.seed, "--seed"),
          json: opts.json === true,
          own,
          managed: opts.managed === true,
        }),
      );
    });
}

interface DemoStatus {
  pipeline?: {
    lanes: Record<string, { queued_bytes?: number }>;
    checkpoints: Record<string, { last_commit_ms: number }>;
  };
}

/**
 * A status line cut to the terminal's width: a line that wraps cannot be redrawn in place with `\r`,
 * so it scrolls instead (#15). The last column stays free (some terminals wrap on it).
 */
export function fitToWidth(line: string, columns: number | undefined): string {
  if (columns === undefined || columns <= 1 || line.length < columns) return line;
  return `${line.slice(0, columns - 2)}…`;
}

/** One live line: progress, rate, queued bytes, and the newest checkpoint commit per key. */
function statusLine(
  status: Record<string, unknown>,
  total: number,
  emitted: number,
  started: number,
): string {
  const p = (status as DemoStatus).pipeline;
  const queued = Object.values(p?.lanes ?? {}).reduce((n, l) => n + (l.queued_bytes ?? 0), 0);
  const secs = (performance.now() - started) / 1000;
  const now = Date.now();
  const keys = Object.entries(p?.checkpoints ?? {})
    .map(
      ([k, c]) =>
        `${k.replace(/^pubsub:\/event\//, "")} ${((now - c.last_commit_ms) / 1000).toFixed(1)}s ago`,
    )
    .join(", ");
  return `  delivered ${total}/${emitted}  ${Math.round(total / secs)} events/s  queue ${queued} B  committed: ${keys || "-"}`;
}

async function runDemo(
  io: CliIO,
  o: {
    events: number;
    durationMs: number;
    seed: number;
    json: boolean;
    own: OwnLoki | undefined;
    managed: boolean;
  },
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "sf2loki-demo-"));
  // Loaded here, not at the top: every command shares this module graph, and the daemon needs none
  // of the simulated org (gRPC server, Avro, protobufjs).
  const [{ startDemoWorld }, { createApp }, { MAX_BACKLOG_SPAN_MS }] = await Promise.all([
    import("../sim/demo-world.ts"),
    import("../daemon/app.ts"),
    import("../sim/salesforce/events.ts"),
  ]);
  const own = o.own;
  const orgId = own ? demoOrgId() : undefined;
  const world = await startDemoWorld({
    seed: o.seed,
    eventsPerTopic: o.events,
    ...(orgId ? { orgId } : {}),
    managed: o.managed,
  });
  // The backlog is dated back from now, a second apart (at most MAX_BACKLOG_SPAN_MS): the oldest event.
  const oldestMs = Date.now() - Math.min(o.events * 1000, MAX_BACKLOG_SPAN_MS) - 60_000;
  const readBack =
    own && orgId
      ? lokiReadBack({
          pushUrl: own.pushUrl,
          tenantId: own.tenantId,
          orgId,
          startNs: BigInt(oldestMs) * 1_000_000n,
        })
      : undefined;
  const stop = new AbortController();
  const onSignal = (): void => {
    stop.abort();
  };
  process.once("SIGINT", onSignal);
  const started = performance.now();
  let ticker: NodeJS.Timeout | undefined;
  try {
    const tree = world.config(join(dir, "state.json")) as { sink: { loki: Record<string, unknown> } };
    if (own) {
      tree.sink.loki.url = own.pushUrl;
      if (own.tenantId !== undefined) tree.sink.loki.tenant_id = own.tenantId;
    }
    const config = validateConfig(tree);
    // Warnings only, on stderr: stdout carries the summary (`--json`).
    const logger = createLogger({ level: "warn", format: io.isTTY ? "text" : "json", stderr: true });
    const app = createApp(config, { logger, version: VERSION });
    if (!o.json)
      io.stderr(
        `sf2loki demo: ${world.org.pubsubEndpoint} (simulated org) -> ` +
          (own
            ? `${own.pushUrl} (your Loki${own.tenantId ? `, tenant ${own.tenantId}` : ""}, sf_org_id ${orgId})\n`
            : `${world.loki.pushUrl} (Loki receiver)\n`),
      );
    const deadline = setTimeout(() => {
      stop.abort();
    }, o.durationMs);
    const counter = deliveredCounter(world, readBack);
    ticker = setInterval(() => {
      const { total, emitted } = counter();
      if (io.isTTY && !o.json) {
        // \x1b[K clears what a longer previous line left, instead of padding that could wrap.
        const line = fitToWidth(statusLine(app.status(), total, emitted, started), io.columns?.());
        io.stderr(`\r${line}\x1b[K`);
      }
      if (emitted > 0 && total >= emitted) stop.abort();
    }, 250);
    await app.run(stop.signal);
    clearTimeout(deadline);
    const stats = readBack ? await readBackStats(world.stats(), readBack) : world.stats();
    const missing = Object.values(stats).reduce((n, s) => n + s.missing, 0);
    const summary = {
      seconds: Math.round((performance.now() - started) / 100) / 10,
      topics: stats,
      emitted: Object.values(stats).reduce((n, s) => n + s.emitted, 0),
      delivered: Object.values(stats).reduce((n, s) => n + s.delivered, 0),
      duplicates: Object.values(stats).reduce((n, s) => n + s.duplicates, 0),
      missing,
      // Where each managed subscription's replay stands on the (simulated) Salesforce side.
      ...(o.managed
        ? {
            managed: world.org.stats().managed.map((m) => ({
              subscription: m.developerName,
              topic: m.topic,
              committed: m.committed ?? null,
              last: world.org.stats().topics[m.topic]?.maxReplayId ?? null,
              commits: m.commits,
            })),
          }
        : {}),
      ...(own && readBack
        ? {
            loki: {
              push_url: own.pushUrl,
              tenant_id: own.tenantId ?? null,
              sf_org_id: orgId,
              queries: readBack.queries,
            },
          }
        : {}),
    };
    if (o.json) io.stdout(JSON.stringify(summary) + "\n");
    else {
      if (io.isTTY) io.stderr("\n");
      io.stdout(`sf2loki demo finished in ${summary.seconds}s\n`);
      for (const [topic, s] of Object.entries(stats)) {
        io.stdout(
          `  ${topic.padEnd(34)} emitted ${s.emitted}  delivered ${s.delivered}  duplicates ${s.duplicates}  missing ${s.missing}\n`,
        );
      }
      io.stdout(
        `  total: emitted ${summary.emitted}, delivered ${summary.delivered}, duplicates ${summary.duplicates}, missing ${missing}\n`,
      );
      for (const m of summary.managed ?? [])
        io.stdout(
          `  managed ${m.subscription}: committed on Salesforce up to replay ${m.committed ?? "-"} of ${m.last ?? "-"} (${m.commits} commits)\n`,
        );
      if (readBack) {
        io.stdout(
          `  counted in your Loki through LogQL; in Grafana (Explore, this Loki${own?.tenantId ? `, tenant ${own.tenantId}` : ""}):\n`,
        );
        for (const q of readBack.queries) io.stdout(`    ${q}\n`);
      }
    }
    return missing === 0 ? EXIT_OK : EXIT_FAILURE;
  } catch (err) {
    return reportError(err, io);
  } finally {
    clearInterval(ticker);
    process.off("SIGINT", onSignal);
    await world.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

type TopicStats = Record<string, { emitted: number; delivered: number; duplicates: number; missing: number }>;

/**
 * Events delivered so far, for the live line and the stop: the built-in receiver is asked on every
 * tick; an operator's Loki every 2 s through a metric query (one in flight at a time).
 */
function deliveredCounter(
  world: { stats(): TopicStats },
  readBack: LokiReadBack | undefined,
): () => { total: number; emitted: number } {
  let stored = 0;
  let asking = false;
  let lastAskMs = 0;
  return () => {
    const stats = world.stats();
    const emitted = Object.values(stats).reduce((n, s) => n + s.emitted, 0);
    if (!readBack) return { total: Object.values(stats).reduce((n, s) => n + s.delivered, 0), emitted };
    if (!asking && Date.now() - lastAskMs >= 2000) {
      asking = true;
      lastAskMs = Date.now();
      readBack
        .stored()
        .then((byType) => {
          stored = Object.values(byType).reduce((n, c) => n + c, 0);
        })
        .catch(() => undefined) // the final count reports a Loki that does not answer
        .finally(() => {
          asking = false;
        });
    }
    return { total: stored, emitted };
  };
}

/** Per topic: what the org emitted against what the operator's Loki holds, read back through LogQL. */
async function readBackStats(emitted: TopicStats, readBack: LokiReadBack): Promise<TopicStats> {
  const held = await readBack.counts();
  const out: TopicStats = {};
  for (const [topic, s] of Object.entries(emitted)) {
    const c = held[topic.split("/").pop()!] ?? { stored: 0, distinct: 0 };
    out[topic] = {
      emitted: s.emitted,
      delivered: c.distinct,
      duplicates: Math.max(0, c.stored - c.distinct),
      missing: Math.max(0, s.emitted - c.distinct),
    };
  }
  return out;
}

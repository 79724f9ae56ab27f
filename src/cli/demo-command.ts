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

interface DemoOptions {
  events: string;
  duration: string;
  seed: string;
  json?: boolean;
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
    .action(async (opts: DemoOptions) => {
      const events = positiveInt(opts.events, "--events");
      const durationMs = positiveInt(opts.duration, "--duration") * 1000;
      setExit(
        await runDemo(io, {
          events,
          durationMs,
          seed: positiveInt(opts.seed, "--seed"),
          json: opts.json === true,
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
  o: { events: number; durationMs: number; seed: number; json: boolean },
): Promise<number> {
  const dir = await mkdtemp(join(tmpdir(), "sf2loki-demo-"));
  // Loaded here, not at the top: every command shares this module graph, and the daemon needs none
  // of the simulated org (gRPC server, Avro, protobufjs).
  const [{ startDemoWorld }, { createApp }] = await Promise.all([
    import("../sim/demo-world.ts"),
    import("../app.ts"),
  ]);
  const world = await startDemoWorld({ seed: o.seed, eventsPerTopic: o.events });
  const stop = new AbortController();
  const onSignal = (): void => {
    stop.abort();
  };
  process.once("SIGINT", onSignal);
  const started = performance.now();
  let ticker: NodeJS.Timeout | undefined;
  try {
    const config = validateConfig(world.config(join(dir, "state.json")));
    // Warnings only, on stderr: stdout carries the summary (`--json`).
    const logger = createLogger({ level: "warn", format: io.isTTY ? "text" : "json", stderr: true });
    const app = createApp(config, { logger, version: VERSION });
    if (!o.json)
      io.stderr(
        `sf2loki demo: ${world.org.pubsubEndpoint} (simulated org) -> ${world.loki.pushUrl} (Loki receiver)\n`,
      );
    const deadline = setTimeout(() => {
      stop.abort();
    }, o.durationMs);
    ticker = setInterval(() => {
      const stats = world.stats();
      const total = Object.values(stats).reduce((n, s) => n + s.delivered, 0);
      const emitted = Object.values(stats).reduce((n, s) => n + s.emitted, 0);
      if (io.isTTY && !o.json) {
        // \x1b[K clears what a longer previous line left, instead of padding that could wrap.
        const line = fitToWidth(statusLine(app.status(), total, emitted, started), io.columns?.());
        io.stderr(`\r${line}\x1b[K`);
      }
      if (emitted > 0 && total >= emitted) stop.abort();
    }, 250);
    await app.run(stop.signal);
    clearTimeout(deadline);
    const stats = world.stats();
    const missing = Object.values(stats).reduce((n, s) => n + s.missing, 0);
    const summary = {
      seconds: Math.round((performance.now() - started) / 100) / 10,
      topics: stats,
      emitted: Object.values(stats).reduce((n, s) => n + s.emitted, 0),
      delivered: Object.values(stats).reduce((n, s) => n + s.delivered, 0),
      duplicates: Object.values(stats).reduce((n, s) => n + s.duplicates, 0),
      missing,
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

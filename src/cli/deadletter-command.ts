// `sf2loki deadletter list|show|replay|purge`: the operator's hands on the entries Loki refused for
// good, through the same store factory as the daemon (file, S3, GCS, Azure alike) and, for replay,
// the daemon's own Loki sink and egress governor. Exit codes as for `state`: 0, 1 (store or Loki
// failure, unknown id), 2 (config or flags).
import { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { buildDeadLetterStore } from "../deadletter/build.ts";
import { DeadLetterNotFoundError, DeadLetterStoreError } from "../deadletter/errors.ts";
import { REPLAY_BATCH, replay } from "../deadletter/replay.ts";
import { matches, parseSelection, type SelectFlags } from "../deadletter/select.ts";
import type { DeadLetterRecord, DeadLetterStore } from "../deadletter/types.ts";
import { Sf2LokiError, describeError, foldLines } from "../errors.ts";
import { buildStore } from "../state/build.ts";
import { errnoCode } from "../state/state-fs.ts";
import { isMissingBucket, isOutage } from "../state/transient.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { buildGraph, type DestinationWiring, type Graph } from "../daemon/wiring.ts";
import { UsageError } from "./config-command.ts";
import { EXIT_OK, reportError, type CliIO } from "./exit.ts";
import { stopOnSignals } from "./stop-signal.ts";

interface Globals {
  config?: string;
}

/** Loki, a clock and a signal for replay; tests pass their own clock. */
export interface DeadLetterCommandDeps {
  clock?: Clock;
}

const LINE_PREVIEW = 60;

async function withStore(
  io: CliIO,
  opts: Globals,
  clock: Clock,
  fn: (store: DeadLetterStore, config: Config) => Promise<void>,
): Promise<number> {
  let store: DeadLetterStore | undefined;
  try {
    const config = await loadConfig(opts.config, io.env);
    store = buildDeadLetterStore(config.state, config.deadletter, clock);
    await fn(store, config);
    return EXIT_OK;
  } catch (caught) {
    // A raw transport, SDK or file-system error becomes one line naming the store; a bug keeps its stack.
    const err =
      store && !(caught instanceof Sf2LokiError) && isStoreFailure(caught)
        ? new DeadLetterStoreError(
            isMissingBucket(caught)
              ? `the dead-letter store ${store.location} is in a bucket or container that does not exist ` +
                  `(${foldLines(describeError(caught))}); create it (aws s3 mb, gcloud storage buckets create, ` +
                  "az storage container create) or fix state's bucket or container, then rerun"
              : `the dead-letter store ${store.location} could not be read or written (${foldLines(describeError(caught))}); ` +
                  "check the path or bucket, the permissions (list, get, put and delete) and the network, then rerun",
            { cause: caught },
          )
        : caught;
    return reportError(err, io);
  } finally {
    await store?.close().catch(() => undefined);
  }
}

/** What a store's backend throws: a socket, an HTTP status from an SDK, or a file-system errno. */
function isStoreFailure(err: unknown): boolean {
  if (isOutage(err) || errnoCode(err) !== undefined) return true;
  const e = (err ?? {}) as { $metadata?: unknown; statusCode?: unknown; code?: unknown };
  return e.$metadata !== undefined || typeof e.statusCode === "number" || typeof e.code === "number";
}

async function selected(
  store: DeadLetterStore,
  flags: SelectFlags,
  clock: Clock,
): Promise<DeadLetterRecord[]> {
  const selection = parseSelection(flags, clock.now());
  return (await store.list(AbortSignal.timeout(120_000))).filter((r) => matches(r, selection));
}

function preview(line: string): string {
  const flat = line.replace(/\s+/g, " ");
  return flat.length > LINE_PREVIEW ? `${flat.slice(0, LINE_PREVIEW - 1)}…` : flat;
}

function table(records: readonly DeadLetterRecord[]): string {
  const rows = [
    ["ID", "DEAD-LETTERED AT", "REASON", "ORG", "SOURCE", "EVENT TYPE", "LINE"],
    ...records.map((r) => [
      r.id,
      r.dead_lettered_at,
      r.reason,
      r.org ?? "-",
      r.labels.source ?? "-",
      r.labels.event_type ?? "-",
      preview(r.line),
    ]),
  ];
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((row) => row[c]!.length)));
  return rows
    .map((row) => row.map((cell, c) => (c === row.length - 1 ? cell : cell.padEnd(widths[c]!))).join("  "))
    .join("\n");
}

function summary(records: readonly DeadLetterRecord[]): string {
  const byReason = new Map<string, number>();
  for (const r of records) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1);
  return [...byReason].map(([reason, n]) => `${reason}=${n}`).join(" ");
}

const selectOptions = (cmd: Command): Command =>
  cmd
    .option(
      "--since <when>",
      "only letters kept since a time (2026-12-01, 2026-12-01T10:00:00Z) or an age (2h, 7d)",
    )
    .option("--reason <reason>", "only this reason (bad_request, oversized_413, permanent, ...)")
    .option("--org <name>", "only this org (multi-org)");

export function deadletterCommand(
  io: CliIO,
  setExit: (code: number) => void,
  deps: DeadLetterCommandDeps = {},
): Command {
  const clock = deps.clock ?? systemClock;
  const cmd = new Command("deadletter").description(
    "inspect, replay and purge entries Loki refused for good (see docs/egress.md)",
  );

  selectOptions(cmd.command("list"))
    .description("print the dead letters, oldest first, as a table (--json: one JSON object per line)")
    .option("--json", "one JSON object per line per entry")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<Globals & SelectFlags & { json?: boolean }>();
      setExit(
        await withStore(io, opts, clock, async (store) => {
          const records = await selected(store, opts, clock);
          if (opts.json) {
            for (const r of records) io.stdout(JSON.stringify(r) + "\n");
            return;
          }
          if (records.length === 0) {
            io.stdout(`(no dead letters match in ${store.location})\n`);
            return;
          }
          io.stdout(`${table(records)}\n\n${records.length} dead letter(s): ${summary(records)}\n`);
        }),
      );
    });

  cmd
    .command("show")
    .description("print one dead letter in full, as indented JSON")
    .argument("<id>")
    .action(async function (this: Command, id: string) {
      const opts = this.optsWithGlobals<Globals>();
      setExit(
        await withStore(io, opts, clock, async (store) => {
          const record = (await store.list(AbortSignal.timeout(120_000))).find((r) => r.id === id);
          if (!record) {
            throw new DeadLetterNotFoundError(
              `no dead letter '${id}' in ${store.location} (replayed, purged or evicted?); 'sf2loki deadletter list' shows the ids held`,
            );
          }
          io.stdout(JSON.stringify(record, null, 2) + "\n");
        }),
      );
    });

  selectOptions(cmd.command("replay"))
    .description(
      "send dead letters to Loki again; accepted ones are removed, refused ones stay with Loki's new words",
    )
    .option("--dry-run", "say what would be sent; send and remove nothing")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<Globals & SelectFlags & { dryRun?: boolean }>();
      setExit(
        await withStore(io, opts, clock, async (store, config) => {
          const records = await selected(store, opts, clock);
          if (records.length === 0) {
            io.stdout(`sf2loki: no dead letters match in ${store.location}; nothing to replay\n`);
            return;
          }
          if (opts.dryRun) {
            io.stdout(
              `sf2loki: would replay ${records.length} dead letter(s) (${summary(records)}) from ${store.location} ` +
                `to ${config.sink.loki.url} (dry run: nothing sent, nothing removed)\n`,
            );
            return;
          }
          await replayTo(io, store, config, records, clock);
        }),
      );
    });

  selectOptions(cmd.command("purge"))
    .description("remove dead letters for good (--all, or a --since/--reason/--org selection)")
    .option("--all", "remove every dead letter")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<Globals & SelectFlags & { all?: boolean }>();
      const selecting = opts.since !== undefined || opts.reason !== undefined || opts.org !== undefined;
      if (!opts.all && !selecting) {
        throw new UsageError(
          "purge needs --all, or --since, --reason or --org to say which dead letters to remove",
        );
      }
      if (opts.all && selecting) {
        throw new UsageError("purge --all cannot be combined with --since, --reason or --org");
      }
      setExit(
        await withStore(io, opts, clock, async (store) => {
          const records = await selected(store, opts, clock);
          const removed = await store.rewrite(
            new Set(records.map((r) => r.id)),
            new Map(),
            AbortSignal.timeout(300_000),
          );
          io.stdout(
            removed === 0
              ? `sf2loki: no dead letters match in ${store.location}; nothing removed\n`
              : `sf2loki: purged ${removed} dead letter(s) (${summary(records)}) from ${store.location}\n`,
          );
        }),
      );
    });

  cmd.action(() => {
    throw new UsageError("deadletter needs a verb: list, show, replay or purge");
  });
  return cmd;
}

/** Each letter goes back to the Loki its org sends to (`orgs[].sink.loki`), else the top-level one. */
function byDestination(
  graph: Graph,
  records: readonly DeadLetterRecord[],
): Map<DestinationWiring, DeadLetterRecord[]> {
  const main = graph.destinations[0]!;
  const out = new Map<DestinationWiring, DeadLetterRecord[]>();
  for (const r of records) {
    const d = graph.destinations.find((w) => w.destination.orgs.includes(r.org ?? "")) ?? main;
    const list = out.get(d) ?? [];
    list.push(r);
    out.set(d, list);
  }
  return out;
}

async function replayTo(
  io: CliIO,
  store: DeadLetterStore,
  config: Config,
  records: readonly DeadLetterRecord[],
  clock: Clock,
): Promise<void> {
  // The daemon's sinks and governors, built by the same wiring; nothing else of the graph is started.
  const graph = buildGraph(config, { clock });
  const stop = stopOnSignals();
  try {
    if (graph.destinations.some((d) => d.egress)) {
      // Today's budget counts, read without a lock (the daemon may be running); replayed bytes count
      // against them here but are not written back: the daemon's document has one writer.
      const reader = buildStore(config.state, { exclusiveLock: false, clock });
      try {
        for (const d of graph.destinations) await d.egress?.startTerm(reader);
      } finally {
        await reader.close();
      }
    }
    const long = records.length > REPLAY_BATCH;
    for (const [destination, letters] of byDestination(graph, records)) {
      const result = await replay({
        store,
        sink: destination.sink,
        ...(destination.lookup ? { lookup: destination.lookup } : {}),
        onLookupFailed: (err) => {
          io.stderr(
            `sf2loki deadletter: could not ask Loki what it already holds (${describeError(err)}); ` +
              "replaying unchecked: a letter an earlier, interrupted replay delivered may be stored twice\n",
          );
        },
        records: letters,
        clock,
        signal: stop.signal,
        onBatch: (p) => {
          if (long)
            io.stderr(
              `sf2loki deadletter: replayed ${p.sent}/${p.total} to ${destination.destination.loki.url} ` +
                `(delivered ${p.delivered}, refused again ${p.refused})\n`,
            );
        },
      });
      const held = result.held > 0 ? `, ${result.held} held back by the daily egress budget (kept)` : "";
      const already =
        result.alreadyStored > 0
          ? `, ${result.alreadyStored} already in Loki (an earlier replay delivered them; removed, not re-sent)`
          : "";
      io.stdout(
        `sf2loki: replayed ${result.sent} dead letter(s) to ${destination.destination.loki.url}: ` +
          `${result.delivered} delivered and removed, ${result.refused} refused again (kept with Loki's new ` +
          `detail)${already}${held}\n`,
      );
    }
  } finally {
    stop.dispose();
    await Promise.allSettled([
      ...graph.destinations.map((d) => d.sink.close()),
      graph.store.close(),
      graph.deadLetters?.store.close(),
    ]);
  }
}

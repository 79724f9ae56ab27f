// `sf2loki state show|set|delete|export|import`: the operator's hands on the checkpoint document,
// through the same store factory as the daemon, so file, S3 and GCS behave alike.
import { readFile, writeFile } from "node:fs/promises";

import { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import type { Config } from "../config/schema.ts";
import { Sf2LokiError, describeError } from "../errors.ts";
import { buildCoordinator } from "../coordinate/build.ts";
import { LeaseCoordinator } from "../coordinate/lease/coordinator.ts";
import { buildStore } from "../state/build.ts";
import { StateFileLockError, StateStoreConflictError, stateErrors } from "../state/errors.ts";
import { RESERVED_KEYS } from "../state/document.ts";
import type { CheckpointStore } from "../state/store.ts";
import { isOutage } from "../state/transient.ts";
import { fnmatchcase } from "../util/glob.ts";
import { UsageError } from "./config-command.ts";
import { EXIT_OK, reportError, type CliIO } from "./exit.ts";

interface StateOptions {
  config?: string;
  force?: boolean;
}

const LOCK_ADVICE =
  "stop the running daemon first, or pass --force to bypass the lock (unsafe if the daemon is really still running: writes can race and clobber checkpoints)";
const CONFLICT_ADVICE = "another writer raced this state object; retry the command";

/** A state operation refused before it touched the store; exit 1 with this line. */
class StateRefusal extends Sf2LokiError {
  constructor(message: string) {
    super("SF2LOKI_STATE_REFUSED", message);
  }
}

/** The epoch fence is the stores' own; only --force may repair it (#99: a reset epoch fences the leader out). */
function refuseReserved(key: string, verb: string, force: boolean | undefined): void {
  if (RESERVED_KEYS.has(key) && !force) {
    throw new StateRefusal(
      `'${key}' is a reserved internal key; refusing to ${verb} it (pass --force, with every replica stopped, to repair a fence epoch)`,
    );
  }
}

/**
 * #102: under a real coordinator the daemon holds no file lock, so a live leader would silently revert a
 * repair. Refuse unless --force, naming who holds the lease; the leader (and its standby) must stop first.
 */
async function refuseUnderCoordinator(config: Config, opts: StateOptions, verb: string): Promise<void> {
  if (opts.force || config.coordinate.type === "noop") return;
  const type = config.coordinate.type;
  let who: string;
  try {
    const coordinator = buildCoordinator(config.coordinate);
    const lease =
      coordinator instanceof LeaseCoordinator
        ? await coordinator.peek(AbortSignal.timeout(10_000))
        : undefined;
    const r = lease?.record;
    if (!lease) who = "the lease does not exist (no replica has led yet)";
    else if (!r || r.holder === "") who = `the lease ${lease.where} is free (released or never held)`;
    else {
      const renewed =
        r.renewedAtMs === undefined ? "" : `, last renewed ${new Date(r.renewedAtMs).toISOString()}`;
      const expires =
        r.renewedAtMs === undefined || r.ttlMs === undefined
          ? ""
          : `, expires ${new Date(r.renewedAtMs + r.ttlMs).toISOString()} unless renewed`;
      who = `the lease ${lease.where} is held by '${r.holder}' (epoch ${r.epoch}${renewed}${expires})`;
    }
  } catch (err) {
    who = `the lease could not be read (${describeError(err)})`;
  }
  throw new StateRefusal(
    `refusing to ${verb} checkpoints while coordinate.type is '${type}': ${who}; a live leader would ` +
      `overwrite the change on its next commit. Stop every sf2loki replica sharing this state first, then rerun with --force`,
  );
}

async function withStore<T>(
  io: CliIO,
  opts: StateOptions,
  verb: string | undefined,
  fn: (store: CheckpointStore) => Promise<T>,
): Promise<number> {
  let store: CheckpointStore | undefined;
  try {
    const config = await loadConfig(opts.config, io.env);
    if (verb) await refuseUnderCoordinator(config, opts, verb);
    store = buildStore(config.state, { exclusiveLock: !opts.force });
    await fn(store);
    return EXIT_OK;
  } catch (caught) {
    // A raw transport error (an SDK's, with its stack) becomes one line naming the store.
    const err = store && isOutage(caught) ? stateErrors.unavailable(store.location, caught) : caught;
    const code = reportError(err, io);
    if (err instanceof StateFileLockError) io.stderr(`sf2loki: ${LOCK_ADVICE}\n`);
    if (err instanceof StateStoreConflictError) io.stderr(`sf2loki: ${CONFLICT_ADVICE}\n`);
    return code;
  } finally {
    await store?.close().catch(() => undefined);
  }
}

function visible(doc: Record<string, string>): [string, string][] {
  return Object.entries(doc)
    .filter(([k]) => !RESERVED_KEYS.has(k))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

function parseDocument(text: string, file: string): Record<string, string> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw new StateRefusal(`${file} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    throw new StateRefusal(`${file} must hold a JSON object of checkpoint keys to string values`);
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(doc)) {
    if (typeof v !== "string") throw new StateRefusal(`${file}: value of '${k}' must be a string`);
    if (RESERVED_KEYS.has(k)) continue;
    out[k] = v;
  }
  return out;
}

export function stateCommand(io: CliIO, setExit: (code: number) => void): Command {
  const state = new Command("state").description("inspect and repair checkpoints (see docs/state.md)");
  const common = (cmd: Command): Command =>
    cmd.option("--force", "bypass the state file lock and the HA refusal (stop the daemon first)");

  common(state.command("show"))
    .description("print checkpoints as key<TAB>value, sorted")
    .option("--key <glob>", "only keys matching this glob (*, ?, [...])", "*")
    .option("--json", "print a JSON object instead")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<StateOptions & { key: string; json?: boolean }>();
      setExit(
        await withStore(io, opts, undefined, async (store) => {
          const rows = visible(await store.snapshot()).filter(([k]) => fnmatchcase(k, opts.key));
          if (opts.json) {
            io.stdout(JSON.stringify(Object.fromEntries(rows), null, 2) + "\n");
            return;
          }
          if (rows.length === 0) {
            io.stdout("(no checkpoints match)\n");
            return;
          }
          for (const [k, v] of rows) io.stdout(`${k}\t${v}\n`);
          const matching = opts.key === "*" ? "" : ` matching '${opts.key}'`;
          io.stdout(`\n${rows.length} checkpoint(s)${matching}\n`);
        }),
      );
    });

  common(state.command("set"))
    .description("set one checkpoint (use -- before a value starting with -)")
    .argument("<key>")
    .argument("<value>")
    .action(async function (this: Command, key: string, value: string) {
      const opts = this.optsWithGlobals<StateOptions>();
      refuseReserved(key, "set", opts.force);
      setExit(
        await withStore(io, opts, "set", async (store) => {
          await store.commit(key, value);
          io.stdout(`sf2loki: set ${key} = ${value}\n`);
        }),
      );
    });

  common(state.command("delete"))
    .description("delete one checkpoint (its source restarts from its preset or lookback)")
    .argument("<key>")
    .action(async function (this: Command, key: string) {
      const opts = this.optsWithGlobals<StateOptions>();
      refuseReserved(key, "delete", opts.force);
      setExit(
        await withStore(io, opts, "delete", async (store) => {
          await store.delete(key);
          io.stdout(`sf2loki: deleted ${key} (its source restarts from preset/lookback on next run)\n`);
        }),
      );
    });

  common(state.command("export"))
    .description("write every checkpoint as sorted, indented JSON (reserved keys excluded)")
    .option("--output <file>", "write to this file instead of stdout")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<StateOptions & { output?: string }>();
      setExit(
        await withStore(io, opts, undefined, async (store) => {
          const text = JSON.stringify(Object.fromEntries(visible(await store.snapshot())), null, 2) + "\n";
          if (opts.output) {
            await writeFile(opts.output, text);
            io.stderr(`sf2loki: exported to ${opts.output}\n`);
          } else io.stdout(text);
        }),
      );
    });

  common(state.command("import"))
    .description("merge checkpoints from an export file in one write (--replace drops keys not in the file)")
    .argument("<file>")
    .option("--replace", "make the document exactly the file's contents")
    .action(async function (this: Command, file: string) {
      const opts = this.optsWithGlobals<StateOptions & { replace?: boolean }>();
      let incoming: Record<string, string>;
      try {
        incoming = parseDocument(await readFile(file, "utf8"), file);
      } catch (err) {
        const e = err as NodeJS.ErrnoException;
        setExit(reportError(e.code ? new StateRefusal(`cannot read ${file}: ${e.code}`) : err, io));
        return;
      }
      setExit(
        await withStore(io, opts, "import", async (store) => {
          const current = await store.snapshot();
          const stale = opts.replace ? Object.keys(current).filter((k) => !(k in incoming)) : [];
          // One write either way: a merge, or the whole document replaced.
          if (opts.replace) await store.replace(incoming);
          else await store.commitMany(incoming);
          const dropped = stale.length > 0 ? `, removed ${stale.length}` : "";
          io.stdout(
            `sf2loki: imported ${Object.keys(incoming).length} checkpoint(s) from ${file}${dropped}\n`,
          );
        }),
      );
    });

  state.action(() => {
    throw new UsageError("state needs a verb: show, set, delete, export or import");
  });
  return state;
}

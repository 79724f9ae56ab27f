// `sf2loki backfill --since DATE [...]`: the flags of spec C §3.7 plus --objects and --dry-run. The
// work is in src/backfill/; this file maps it to exit codes: 2 for a config, date or flag error
// before any network call, 1 when Loki kept refusing pushes (or the backfill's store failed), else 0.
import { Command } from "commander";
import { loadConfig } from "../config/load.ts";
import { parsePlan, type BackfillFlags } from "../backfill/options.ts";
import { StateFileLockError } from "../state/errors.ts";
import { systemClock } from "../util/clock.ts";
import { EXIT_FAILURE, EXIT_OK, reportError, type CliIO } from "./exit.ts";
import { stopOnSignals } from "./stop-signal.ts";

const LOCK_ADVICE =
  "another backfill with this config holds its checkpoint document; let it finish, then rerun this command to resume";

export function backfillCommand(io: CliIO, setExit: (code: number) => void): Command {
  return new Command("backfill")
    .description("load historical EventLogFiles into Loki, resumably (checkpoints under backfill:* keys)")
    .option("--since <date>", "YYYY-MM-DD, UTC, inclusive (required)")
    .option("--until <date>", "YYYY-MM-DD, UTC, exclusive (default: now)")
    .option(
      "--event-types <list>",
      "EventTypes, comma-separated; * discovers (default: the configured types)",
    )
    .option("--objects <list>", "also SOQL-polled event objects, e.g. LoginEvent,ApiEvent")
    .option("--interval <interval>", "Daily or Hourly", "Daily")
    .option("--ingest-timestamps", "stamp entries with the ingest time (event time in metadata event_time)")
    .option("--concurrency <n>", "concurrent file downloads", "2")
    .option("--org <name>", "the org to backfill (multi-org; default the first)")
    .option("--dry-run", "list the files and count the rows/bytes it would push; push and commit nothing")
    .action(async function (this: Command) {
      const flags = this.optsWithGlobals<BackfillFlags & { config?: string }>();
      const stop = stopOnSignals();
      try {
        const plan = parsePlan(flags);
        const config = await loadConfig(flags.config, io.env);
        // Loaded on use, so the daemon (same module graph) does not carry the backfill engine.
        const { runBackfill } = await import("../backfill/run.ts");
        const outcome = await runBackfill({
          config,
          plan,
          io: { stdout: io.stdout, stderr: io.stderr, isTTY: io.isTTY },
          clock: systemClock,
          signal: stop.signal,
        });
        setExit(outcome === "ok" ? EXIT_OK : EXIT_FAILURE);
      } catch (err) {
        setExit(reportError(err, io));
        if (err instanceof StateFileLockError) io.stderr(`sf2loki: ${LOCK_ADVICE}\n`);
      } finally {
        stop.dispose();
      }
    });
}

// The command line. Every command reports through CliIO and returns an exit code; nothing here calls
// process.exit, so the whole CLI runs in-process in tests.
import { Command, CommanderError } from "commander";
import { configCommand, UsageError } from "./config-command.ts";
import { runCheck } from "./check-command.ts";
import { stateCommand } from "./state-command.ts";
import { demoCommand } from "./demo-command.ts";
import { simCommand } from "./sim-command.ts";
import { doctorCommand } from "./doctor-command.ts";
import { backfillCommand } from "./backfill-command.ts";
import { deadletterCommand } from "./deadletter-command.ts";
import { EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, reportError, type CliIO } from "./exit.ts";
import { VERSION } from "./version.ts";

interface GlobalOptions {
  config?: string;
  check?: boolean;
}

export async function runCli(argv: readonly string[], io: CliIO): Promise<number> {
  let exitCode = EXIT_OK;
  const setExit = (code: number): void => {
    exitCode = code;
  };
  const program = new Command("sf2loki")
    .description("Ship Salesforce Event Monitoring data into Grafana Loki.")
    .option("--config <path>", "YAML config file (accepted before or after a subcommand)")
    .option("--check", "validate the config and the offline wiring, then exit (no network)")
    .version(`sf2loki ${VERSION}`, "--version", "print the version")
    .exitOverride()
    .configureOutput({ writeOut: io.stdout, writeErr: io.stderr })
    .showHelpAfterError("(run sf2loki --help for usage)");

  program.action(async (opts: GlobalOptions) => {
    if (opts.check) {
      setExit(await runCheck(opts.config, io));
      return;
    }
    const { runDaemon } = await import("./run-command.ts");
    setExit(await runDaemon(opts.config, io));
  });

  for (const cmd of [
    configCommand(io),
    stateCommand(io, setExit),
    doctorCommand(io, setExit),
    backfillCommand(io, setExit),
    deadletterCommand(io, setExit),
    demoCommand(io, setExit),
    simCommand(io, setExit),
  ]) {
    for (const c of [cmd, ...cmd.commands])
      c.exitOverride().configureOutput({ writeOut: io.stdout, writeErr: io.stderr });
    cmd.hook("preAction", (_this, action) => {
      if (action.optsWithGlobals<GlobalOptions>().check) {
        throw new UsageError(`--check cannot be combined with the '${cmd.name()}' command`);
      }
    });
    program.addCommand(cmd);
  }

  try {
    await program.parseAsync(argv, { from: "user" });
  } catch (err) {
    if (err instanceof CommanderError) {
      if (
        err.code === "commander.helpDisplayed" ||
        err.code === "commander.version" ||
        err.code === "commander.help"
      ) {
        return EXIT_OK;
      }
      return EXIT_CONFIG;
    }
    if (err instanceof UsageError) {
      io.stderr(`sf2loki: ${err.message}\n`);
      return EXIT_CONFIG;
    }
    return reportError(err, io);
  }
  return exitCode;
}

export { EXIT_FAILURE };

// `sf2loki doctor [--json] [--org NAME|--all-orgs]`: the live preflight. The checks live in
// src/doctor/; this file maps their outcome to the exit code (0 all PASS/WARN/SKIP, 1 any FAIL,
// 2 config or org selection failed) and prints the table or the JSON line.
import { Command } from "commander";
import type { DoctorOutcome } from "../doctor/run.ts";
import { UsageError } from "./config-command.ts";
import { EXIT_CONFIG, EXIT_FAILURE, EXIT_OK, type CliIO } from "./exit.ts";

interface DoctorFlags {
  config?: string;
  json?: boolean;
  org?: string;
  allOrgs?: boolean;
}

const EXIT_OF: Record<DoctorOutcome, number> = { ok: EXIT_OK, failed: EXIT_FAILURE, config: EXIT_CONFIG };

export function doctorCommand(io: CliIO, setExit: (code: number) => void): Command {
  return new Command("doctor")
    .description("check every dependency live (Salesforce, Loki, state store, lease); exit 0/1/2")
    .option("--json", "print one JSON line {checks:[{name,status,detail,org?}],exit_code} (docs/cli.md)")
    .option("--org <name>", "check only this org (multi-org configs; ignored with a WARN row for single-org)")
    .option("--all-orgs", "check every org under orgs: (the default)")
    .action(async function (this: Command) {
      const opts = this.optsWithGlobals<DoctorFlags>();
      if (opts.org !== undefined && opts.allOrgs)
        throw new UsageError("--org and --all-orgs exclude each other");
      const stop = new AbortController();
      const onSignal = (): void => {
        stop.abort();
      };
      process.once("SIGINT", onSignal);
      try {
        // Loaded on use: the probes pull in every cloud SDK and gRPC, which the daemon loads only as configured.
        const [{ runDoctor }, { renderJson, renderTable }] = await Promise.all([
          import("../doctor/run.ts"),
          import("../doctor/report.ts"),
        ]);
        const result = await runDoctor({
          configPath: opts.config,
          env: io.env,
          ...(opts.org !== undefined ? { org: opts.org } : {}),
          signal: stop.signal,
        });
        const code = EXIT_OF[result.outcome];
        io.stdout(
          opts.json ? renderJson({ checks: result.rows, exit_code: code }) : renderTable(result.rows),
        );
        setExit(code);
      } finally {
        process.removeListener("SIGINT", onSignal);
      }
    });
}

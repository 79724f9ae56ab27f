// `sf2loki sim`: the simulated org and Loki receiver standalone, for trying sf2loki (or another
// process) against them. Prints one JSON line with the endpoints and a ready-to-use config, then
// serves GET /sim/stats until Ctrl-C.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Command } from "commander";
import { stringify } from "yaml";
import { EXIT_OK, type CliIO } from "./exit.ts";
import { positiveInt } from "./demo-command.ts";

interface SimOptions {
  events: string;
  seed: string;
  state: string;
  elfDays: string;
  elfRows: string;
}

/** Daily EventLogFile types the sim serves; none shares a category with the demo topics (overlap guard). */
export const SIM_ELF_TYPES = ["Report", "URI", "VisualforceRequest"];

export function simCommand(io: CliIO, setExit: (code: number) => void): Command {
  return new Command("sim")
    .description("run the simulated Salesforce org and Loki receiver on loopback until Ctrl-C")
    .option("--events <n>", "events per topic", "20000")
    .option("--seed <n>", "event generator seed", "1")
    .option("--state <path>", "state file path written into the printed config", "./sf2loki-sim-state.json")
    .option("--elf-days <n>", "days of Daily EventLogFiles served (for backfill)", "3")
    .option("--elf-rows <n>", "rows per EventLogFile (one file per type and day)", "2000")
    .action(async (opts: SimOptions) => {
      const rows = positiveInt(opts.elfRows, "--elf-rows");
      // Loaded on use: the daemon shares this module graph and needs none of the simulated org.
      const { startDemoWorld } = await import("../sim/demo-world.ts");
      const world = await startDemoWorld({
        seed: positiveInt(opts.seed, "--seed"),
        eventsPerTopic: positiveInt(opts.events, "--events"),
        // What `doctor` and `backfill` call: a polled object, Daily files for several recent days and
        // types, ApexLogs and an active TraceFlag.
        polling: {
          objects: { ApiAnomalyEventStore: { records: 200 } },
          dailyEventLogFiles: {
            types: Object.fromEntries(SIM_ELF_TYPES.map((t) => [t, rows])),
            days: positiveInt(opts.elfDays, "--elf-days"),
          },
          apexLogs: 20,
          traceFlags: 1,
        },
      });
      const control = createServer((req, res) => {
        if (req.url !== "/sim/stats") {
          res.writeHead(404).end("not found");
          return;
        }
        const body = JSON.stringify({
          topics: world.stats(),
          missing_ids: world.missingIds(20),
          polling: world.pollingStats(),
          loki: world.loki.counts,
        });
        res.writeHead(200, { "content-type": "application/json" }).end(body);
      });
      await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
      const statsUrl = `http://127.0.0.1:${(control.address() as AddressInfo).port}/sim/stats`;
      const config = world.config(opts.state);
      io.stdout(
        JSON.stringify({
          login_url: world.org.loginUrl,
          pubsub_endpoint: world.org.pubsubEndpoint,
          loki_push_url: world.loki.pushUrl,
          stats_url: statsUrl,
          config,
          config_yaml: stringify(config),
        }) + "\n",
      );
      const stop = new AbortController();
      const onSignal = (): void => {
        stop.abort();
      };
      process.once("SIGINT", onSignal);
      process.once("SIGTERM", onSignal);
      await new Promise<void>((resolve) => {
        stop.signal.addEventListener(
          "abort",
          () => {
            resolve();
          },
          { once: true },
        );
      });
      control.close();
      await world.stop();
      setExit(EXIT_OK);
    });
}

// `sf2loki sim`: the simulated org and Loki receiver standalone, for trying sf2loki (or another
// process) against them. Prints one JSON line with the endpoints and a ready-to-use config, then
// serves GET /sim/stats until Ctrl-C.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Command } from "commander";
import { stringify } from "yaml";
import { startDemoWorld } from "../sim/demo-world.ts";
import { EXIT_OK, type CliIO } from "./exit.ts";
import { positiveInt } from "./demo-command.ts";

interface SimOptions {
  events: string;
  seed: string;
  state: string;
}

export function simCommand(io: CliIO, setExit: (code: number) => void): Command {
  return new Command("sim")
    .description("run the simulated Salesforce org and Loki receiver on loopback until Ctrl-C")
    .option("--events <n>", "events per topic", "20000")
    .option("--seed <n>", "event generator seed", "1")
    .option("--state <path>", "state file path written into the printed config", "./sf2loki-sim-state.json")
    .action(async (opts: SimOptions) => {
      const world = await startDemoWorld({
        seed: positiveInt(opts.seed, "--seed"),
        eventsPerTopic: positiveInt(opts.events, "--events"),
      });
      const control = createServer((req, res) => {
        if (req.url !== "/sim/stats") {
          res.writeHead(404).end("not found");
          return;
        }
        const body = JSON.stringify({ topics: world.stats(), missing_ids: world.missingIds(20) });
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

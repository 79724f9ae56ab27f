// `sf2loki sim`: the simulated org and Loki receiver standalone, for trying sf2loki (or another
// process) against them. Prints one JSON line with the endpoints and a ready-to-use config, then
// serves GET /sim/stats until Ctrl-C. `--orgs N` serves N orgs from one simulated instance instead,
// with a multi-org (`orgs:`) config: what sharding spreads across replicas.
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
  orgs?: string;
  managed?: boolean;
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
    .option("--orgs <n>", "serve N orgs (Pub/Sub only) and print a multi-org config, for trying sharding")
    .option(
      "--managed",
      "give every topic a managed event subscription and print a config that streams through them",
    )
    .action(async (opts: SimOptions) => {
      if (opts.orgs !== undefined) {
        await runMultiOrg(io, opts, positiveInt(opts.orgs, "--orgs"));
        setExit(EXIT_OK);
        return;
      }
      const rows = positiveInt(opts.elfRows, "--elf-rows");
      // Loaded on use: the daemon shares this module graph and needs none of the simulated org.
      const { startDemoWorld } = await import("../sim/demo-world.ts");
      const world = await startDemoWorld({
        seed: positiveInt(opts.seed, "--seed"),
        eventsPerTopic: positiveInt(opts.events, "--events"),
        managed: opts.managed === true,
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
      const control = await statsServer(() => ({
        topics: world.stats(),
        missing_ids: world.missingIds(20),
        polling: world.pollingStats(),
        loki: world.loki.counts,
        ...(opts.managed === true ? { managed: world.org.stats().managed } : {}),
      }));
      const statsUrl = control.url;
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
      await untilSignal();
      control.close();
      await world.stop();
      setExit(EXIT_OK);
    });
}

/** Resolves on the first SIGINT or SIGTERM. */
async function untilSignal(): Promise<void> {
  await new Promise<void>((resolve) => {
    const onSignal = (): void => {
      process.off("SIGINT", onSignal);
      process.off("SIGTERM", onSignal);
      resolve();
    };
    process.once("SIGINT", onSignal);
    process.once("SIGTERM", onSignal);
  });
}

/** Serves GET /sim/stats with `stats()` on a loopback port; returns its URL and a closer. */
async function statsServer(stats: () => unknown): Promise<{ url: string; close: () => void }> {
  const control = createServer((req, res) => {
    if (req.url !== "/sim/stats") {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify(stats()));
  });
  await new Promise<void>((resolve) => control.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(control.address() as AddressInfo).port}/sim/stats`,
    close: () => control.close(),
  };
}

/**
 * The `coordinate:` block that shards these orgs across replicas (k8s Lease per org); printed beside
 * the config, not in it, because it needs a cluster (or the S3/GCS/Azure lease) to run.
 */
export const SHARDED_COORDINATE_EXAMPLE = {
  type: "k8s_lease",
  sharding: { enabled: true },
  k8s_lease: { namespace: "sf2loki", name: "sf2loki" },
};

async function runMultiOrg(io: CliIO, opts: SimOptions, orgs: number): Promise<void> {
  // Loaded on use, like the single-org world: the daemon shares this module graph.
  const { startMultiOrgWorld } = await import("../sim/multi-org-world.ts");
  const world = await startMultiOrgWorld({
    orgs,
    seed: positiveInt(opts.seed, "--seed"),
    eventsPerTopic: positiveInt(opts.events, "--events"),
  });
  const control = await statsServer(() => ({ orgs: world.stats(), loki: world.loki.counts }));
  const config = world.config(opts.state);
  io.stdout(
    JSON.stringify({
      login_url: world.sim.loginUrl,
      pubsub_endpoint: world.sim.pubsubEndpoint,
      loki_push_url: world.loki.pushUrl,
      stats_url: control.url,
      orgs: world.names.map((name) => ({
        name,
        org_id: world.org(name).orgId,
        client_id: world.org(name).clientId,
      })),
      config,
      config_yaml: stringify(config),
      sharding_coordinate_example: SHARDED_COORDINATE_EXAMPLE,
    }) + "\n",
  );
  await untilSignal();
  control.close();
  await world.stop();
}

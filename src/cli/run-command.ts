// `sf2loki --config c.yaml`: the daemon.
import { loadConfig } from "../config/load.ts";
import { buildOffline } from "../wiring.ts";
import { reportError, type CliIO, EXIT_OK } from "./exit.ts";

export async function runDaemon(configPath: string | undefined, io: CliIO): Promise<number> {
  try {
    const config = await loadConfig(configPath, io.env);
    await buildOffline(config);
    io.stderr("sf2loki: the daemon's data path is not wired yet; the configuration is valid\n");
    return EXIT_OK;
  } catch (err) {
    return reportError(err, io);
  }
}

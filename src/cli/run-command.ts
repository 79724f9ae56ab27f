// `sf2loki --config c.yaml`: the daemon. Runs until SIGINT/SIGTERM or until every finite source is done.
import { createApp } from "../daemon/app.ts";
import { loadConfig } from "../config/load.ts";
import { createLogger } from "../obs/logger.ts";
import { reportError, type CliIO, EXIT_OK } from "./exit.ts";
import { stopOnSignals, type StopOnSignals } from "./stop-signal.ts";
import { VERSION } from "./version.ts";

export async function runDaemon(configPath: string | undefined, io: CliIO): Promise<number> {
  let stop: StopOnSignals | undefined;
  try {
    const config = await loadConfig(configPath, io.env);
    // A named format is always honoured; only an unnamed one turns human on a terminal.
    const format = config.service.log_format ?? (io.isTTY ? "text" : "json");
    const logger = createLogger({ level: config.service.log_level, format });
    const app = createApp(config, { logger, version: VERSION });
    stop = stopOnSignals();
    await app.run(stop.signal);
    logger.info("sf2loki stopped");
    logger.flush();
    return EXIT_OK;
  } catch (err) {
    return reportError(err, io);
  } finally {
    stop?.dispose();
  }
}

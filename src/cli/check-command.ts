// `sf2loki --check`: the same load and offline build as the daemon, with no network access.
import { describeError } from "../errors.ts";
import { withoutUserinfoIn } from "../util/userinfo.ts";
import { loadConfig } from "../config/load.ts";
import { buildOffline } from "../daemon/wiring.ts";
import { EXIT_CONFIG, EXIT_OK, type CliIO } from "./exit.ts";

export async function runCheck(configPath: string | undefined, io: CliIO): Promise<number> {
  try {
    const config = await loadConfig(configPath, io.env);
    await buildOffline(config);
  } catch (err) {
    io.stderr(`config check FAILED: ${withoutUserinfoIn(describeError(err))}\n`);
    return EXIT_CONFIG;
  }
  io.stdout("config check OK\n");
  return EXIT_OK;
}

// The offline half of the composition root: everything `--check` and the daemon both build from a
// config without touching the network. Guards that fail here are config errors (exit 2).
import type { Config } from "./config/schema.ts";
import { resolvedOrgs } from "./config/orgs.ts";

export interface OfflineBuild {
  config: Config;
  orgNames: string[];
}

export function buildOffline(config: Config): Promise<OfflineBuild> {
  const orgs = resolvedOrgs(config);
  return Promise.resolve({ config, orgNames: orgs.map((o) => o.name) });
}

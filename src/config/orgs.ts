// The org topology after validation: single-org is one org with the empty name (no `org` label,
// unprefixed keys: bit-identical to the legacy shape); multi-org is the list as given.
import { ConfigError } from "../errors.ts";
import type { Config, SalesforceConfig, SourcesConfig } from "./schema.ts";

export interface ResolvedOrg {
  /** Empty for single-org. */
  name: string;
  salesforce: SalesforceConfig;
  sources: SourcesConfig;
  /** Only the first org may read legacy unprefixed checkpoint keys. */
  legacyFallback: boolean;
}

export function resolvedOrgs(config: Config): ResolvedOrg[] {
  if (config.orgs.length > 0) {
    return config.orgs.map((o, i) => ({
      name: o.name,
      salesforce: o.salesforce,
      sources: o.sources,
      legacyFallback: i === 0,
    }));
  }
  if (config.salesforce === null) throw new ConfigError("no Salesforce org configured");
  return [{ name: "", salesforce: config.salesforce, sources: config.sources, legacyFallback: true }];
}

/** `--org NAME` for doctor and backfill: none means the first org. */
export function selectOrg(config: Config, name?: string): ResolvedOrg {
  const orgs = resolvedOrgs(config);
  if (name === undefined) return orgs[0]!;
  const found = orgs.find((o) => o.name === name);
  if (!found) {
    const names = orgs.map((o) => (o.name === "" ? "<single-org>" : o.name));
    throw new ConfigError(`--org '${name}' is not configured; available orgs: [${names.join(", ")}]`);
  }
  return found;
}

// The simulated Salesforce org, for tests, `sf2loki demo`/`sim` and the benchmarks.
export { startSimOrg, startSimOrgs, CORRUPTED_REPLAY_ID_CODE } from "./sim-org.ts";
export type {
  SimOrg,
  SimOrgFaults,
  SimOrgOptions,
  SimOrgEntry,
  SimOrgs,
  SimOrgsOptions,
  SimOrgStats,
  SimTopicStats,
  StreamStats,
  GrpcFault,
  TokenClaims,
} from "./sim-org.ts";
export { buildTopicSchema, generateEvent } from "./events.ts";
export { simSalesforceSettings } from "./settings.ts";

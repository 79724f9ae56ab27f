// Every dashboard sf2loki ships, by output file name. `npm run dashboards` writes them; the drift test
// compares this list with deploy/grafana/dashboards/.
import type { Dashboard } from "@grafana/grafana-foundation-sdk/dashboard";
import { apexPerformance } from "./apex-performance.ts";
import { apiUsage } from "./api-usage.ts";
import { connectorHealth } from "./connector-health.ts";
import { securityAccess } from "./security-access.ts";

export const DASHBOARDS_DIR = new URL("../dashboards/", import.meta.url);

export function dashboards(): Record<string, Dashboard> {
  return {
    "sf2loki-connector-health.json": connectorHealth().build(),
    "sf2loki-security-access.json": securityAccess().build(),
    "sf2loki-api-usage.json": apiUsage().build(),
    "sf2loki-apex-performance.json": apexPerformance().build(),
  };
}

/** The file content for one dashboard: stable key order from the SDK, two-space JSON, final newline. */
export function render(d: Dashboard): string {
  return JSON.stringify(d, null, 2) + "\n";
}

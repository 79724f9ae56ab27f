// Apex and page performance (Loki, EventLogFile): callout failures and latency, slow Apex executions
// and slow pages, from the ApexCallout, ApexExecution and URI event log files.
import { RowBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import type { DashboardBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import { sf2lokiDashboard, STREAM, table, timeseries } from "./panels.ts";

const elf = (type: string): string => `{${STREAM}, source="eventlogfile", event_type="${type}"}`;

export function apexPerformance(): DashboardBuilder {
  return sf2lokiDashboard(
    "sf2loki-apex-performance",
    "sf2loki / Apex and page performance",
    "Apex callouts (success, latency, endpoints), Apex executions and page run times from EventLogFiles.",
    ["loki"],
  )
    .withRow(new RowBuilder("Apex callouts"))
    .withPanel(
      timeseries("loki", "Callouts by outcome", "ApexCallout rows by SUCCESS (1 ok, 0 failed).", "short", [
        {
          expr: `sum by (SUCCESS) (count_over_time(${elf("ApexCallout")} | json | __error__="" [$__auto]))`,
          legend: "SUCCESS={{SUCCESS}}",
        },
      ]),
    )
    .withPanel(
      timeseries("loki", "Callout time p95", "95th percentile of ApexCallout TIME (ms).", "ms", [
        {
          expr: `quantile_over_time(0.95, ${elf("ApexCallout")} | json | __error__="" | unwrap TIME [$__auto]) by (METHOD)`,
          legend: "{{METHOD}}",
        },
      ]),
    )
    .withPanel(
      table(
        "loki",
        "Failing callout endpoints",
        "ApexCallout rows with SUCCESS=0 by URL over the dashboard range.",
        `topk(20, sum by (URL) (count_over_time(${elf("ApexCallout")} | json | SUCCESS="0" [$__range])))`,
      ),
    )
    .withRow(new RowBuilder("Apex executions and pages"))
    .withPanel(
      timeseries("loki", "Apex execution time p95", "95th percentile of ApexExecution RUN_TIME (ms).", "ms", [
        {
          expr: `quantile_over_time(0.95, ${elf("ApexExecution")} | json | __error__="" | unwrap RUN_TIME [$__auto]) by (ENTRY_POINT)`,
          legend: "{{ENTRY_POINT}}",
        },
      ]),
    )
    .withPanel(
      timeseries("loki", "Page run time p95", "95th percentile of URI RUN_TIME (ms) by URI.", "ms", [
        {
          expr: `topk(10, quantile_over_time(0.95, ${elf("URI")} | json | __error__="" | unwrap RUN_TIME [$__auto]) by (URI))`,
          legend: "{{URI}}",
        },
      ]),
    )
    .withPanel(
      table(
        "loki",
        "Slowest reports",
        "Report rows by REPORT_ID_DERIVED, 95th percentile RUN_TIME over the dashboard range.",
        `topk(20, quantile_over_time(0.95, ${elf("Report")} | json | __error__="" | unwrap RUN_TIME [$__range]) by (REPORT_ID_DERIVED))`,
      ),
    );
}

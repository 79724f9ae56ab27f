// API usage (Loki + Prometheus): which APIs and clients use the org, how heavy the calls are, and how
// much of the daily API allowance is left (sf2loki's own org-limits gauges).
import { RowBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import type { DashboardBuilder } from "@grafana/grafana-foundation-sdk/dashboard";
import { JOB, sf2lokiDashboard, STREAM, table, timeseries } from "./panels.ts";

const RT_API = `{${STREAM}, source="pubsub", event_type="ApiEventStream"}`;
const ELF_API_TOTAL = `{${STREAM}, source="eventlogfile", event_type="ApiTotalUsage"}`;

export function apiUsage(): DashboardBuilder {
  return sf2lokiDashboard(
    "sf2loki-api-usage",
    "sf2loki / API usage",
    "API calls by type, operation, client and family (ApiEventStream, ApiTotalUsage ELF) and org API limits.",
    ["loki", "prometheus"],
  )
    .withRow(new RowBuilder("Org limits"))
    .withPanel(
      timeseries(
        "prometheus",
        "Daily API requests remaining",
        "Share of DailyApiRequests left (salesforce.limits.enabled).",
        "percentunit",
        [
          {
            expr: `min by (org) (sf2loki_salesforce_limit_remaining{${JOB}, limit_name="DailyApiRequests"} / sf2loki_salesforce_limit_max{${JOB}, limit_name="DailyApiRequests"})`,
            legend: "{{org}}",
          },
        ],
      ),
    )
    .withRow(new RowBuilder("Real-time API events (ApiEventStream)"))
    .withPanel(
      timeseries("loki", "API calls by type and operation", "ApiEventStream events.", "short", [
        {
          expr: `sum by (ApiType, Operation) (count_over_time(${RT_API} | json | __error__="" [$__auto]))`,
          legend: "{{ApiType}} {{Operation}}",
        },
      ]),
    )
    .withPanel(
      timeseries("loki", "Rows returned per second", "Sum of RowsReturned over ApiEventStream.", "short", [
        {
          expr: `sum by (ApiType) (rate(${RT_API} | json | __error__="" | unwrap RowsReturned [$__auto]))`,
          legend: "{{ApiType}}",
        },
      ]),
    )
    .withPanel(
      table(
        "loki",
        "Top API clients",
        "ApiEventStream events by Client and Application over the dashboard range.",
        `topk(20, sum by (Client, Application) (count_over_time(${RT_API} | json | __error__="" [$__range])))`,
      ),
    )
    .withPanel(
      timeseries("loki", "API call latency p95", "95th percentile of ElapsedTime (ms) by API type.", "ms", [
        {
          expr: `quantile_over_time(0.95, ${RT_API} | json | __error__="" | unwrap ElapsedTime [$__auto]) by (ApiType)`,
          legend: "{{ApiType}}",
        },
      ]),
    )
    .withRow(new RowBuilder("API Total Usage EventLogFile"))
    .withPanel(
      timeseries("loki", "API calls by family", "ApiTotalUsage rows by API_FAMILY.", "short", [
        {
          expr: `sum by (API_FAMILY) (count_over_time(${ELF_API_TOTAL} | json | __error__="" [$__auto]))`,
          legend: "{{API_FAMILY}}",
        },
      ]),
    )
    .withPanel(
      table(
        "loki",
        "Top API resources and clients",
        "ApiTotalUsage rows by API_RESOURCE and CLIENT_NAME over the dashboard range.",
        `topk(20, sum by (API_RESOURCE, CLIENT_NAME) (count_over_time(${ELF_API_TOTAL} | json | __error__="" [$__range])))`,
      ),
    );
}

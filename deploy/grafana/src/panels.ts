// Small builders every sf2loki dashboard shares: the datasource and job variables, and panels that
// take a query string and a unit. Prometheus panels query ${ds_prom}, Loki panels ${ds_loki}, both
// filtered by the `job` the operator picks (the daemon's scrape job, and the Loki `job` label sf2loki
// stamps on every stream, are both "sf2loki" by default).
import type * as cog from "@grafana/grafana-foundation-sdk/cog";
import type * as dashboard from "@grafana/grafana-foundation-sdk/dashboard";
import {
  CustomVariableBuilder,
  DashboardBuilder,
  DatasourceVariableBuilder,
} from "@grafana/grafana-foundation-sdk/dashboard";
import { DataqueryBuilder as LokiQuery } from "@grafana/grafana-foundation-sdk/loki";
import { PanelBuilder as LogsPanel } from "@grafana/grafana-foundation-sdk/logs";
import { DataqueryBuilder as PromQuery } from "@grafana/grafana-foundation-sdk/prometheus";
import { PanelBuilder as StatPanel } from "@grafana/grafana-foundation-sdk/stat";
import { PanelBuilder as TablePanel } from "@grafana/grafana-foundation-sdk/table";
import { PanelBuilder as TextPanel } from "@grafana/grafana-foundation-sdk/text";
import { PanelBuilder as TimeseriesPanel } from "@grafana/grafana-foundation-sdk/timeseries";

export const PROM = { type: "prometheus", uid: "${ds_prom}" } as const;
export const LOKI = { type: "loki", uid: "${ds_loki}" } as const;

/** The Prometheus selector every metric query carries. */
export const JOB = 'job=~"$job"';
/** The Loki stream selector prefix every log query carries. */
export const STREAM = 'job=~"$job"';

/** A dashboard with the shared variables, tags, refresh and time range. */
export function sf2lokiDashboard(
  uid: string,
  title: string,
  description: string,
  datasources: readonly ("prometheus" | "loki")[],
): DashboardBuilder {
  const d = new DashboardBuilder(title)
    .uid(uid)
    .description(description)
    .tags(["sf2loki", "salesforce"])
    .refresh("1m")
    .time({ from: "now-6h", to: "now" })
    .timezone("browser");
  if (datasources.includes("prometheus"))
    d.withVariable(new DatasourceVariableBuilder("ds_prom").label("Prometheus").type("prometheus"));
  if (datasources.includes("loki"))
    d.withVariable(new DatasourceVariableBuilder("ds_loki").label("Loki").type("loki"));
  return d.withVariable(
    new CustomVariableBuilder("job")
      .label("job")
      .values("sf2loki")
      .current({ text: "sf2loki", value: "sf2loki" })
      .allowCustomValue(true),
  );
}

export interface Query {
  expr: string;
  legend?: string;
}

const q = (query: string | Query): Query => (typeof query === "string" ? { expr: query } : query);

function promTargets(queries: readonly (string | Query)[]): cog.Builder<cog.Dataquery>[] {
  return queries.map((query, i) => {
    const { expr, legend } = q(query);
    const b = new PromQuery().expr(expr).refId(String.fromCharCode(65 + i));
    return legend === undefined ? b : b.legendFormat(legend);
  });
}

function lokiTargets(queries: readonly (string | Query)[]): cog.Builder<cog.Dataquery>[] {
  return queries.map((query, i) => {
    const { expr, legend } = q(query);
    const b = new LokiQuery().expr(expr).refId(String.fromCharCode(65 + i));
    return legend === undefined ? b : b.legendFormat(legend);
  });
}

type Source = "prometheus" | "loki";

function targets(source: Source, queries: readonly (string | Query)[]): cog.Builder<cog.Dataquery>[] {
  return source === "prometheus" ? promTargets(queries) : lokiTargets(queries);
}

/** A time series of one or more queries. */
export function timeseries(
  source: Source,
  title: string,
  description: string,
  unit: string,
  queries: readonly (string | Query)[],
): cog.Builder<dashboard.Panel> {
  return new TimeseriesPanel()
    .title(title)
    .description(description)
    .datasource(source === "prometheus" ? PROM : LOKI)
    .unit(unit)
    .targets(targets(source, queries))
    .height(8)
    .span(12);
}

/** A single-value panel: the last value of one query. */
export function stat(
  source: Source,
  title: string,
  description: string,
  unit: string,
  query: string | Query,
): cog.Builder<dashboard.Panel> {
  return new StatPanel()
    .title(title)
    .description(description)
    .datasource(source === "prometheus" ? PROM : LOKI)
    .unit(unit)
    .targets(targets(source, [query]))
    .height(5)
    .span(6);
}

/** A table of an instant query (top-N lists). */
export function table(
  source: Source,
  title: string,
  description: string,
  query: string | Query,
): cog.Builder<dashboard.Panel> {
  const target =
    source === "prometheus"
      ? new PromQuery().expr(q(query).expr).refId("A").instant()
      : new LokiQuery().expr(q(query).expr).refId("A").instant(true).range(false);
  return new TablePanel()
    .title(title)
    .description(description)
    .datasource(source === "prometheus" ? PROM : LOKI)
    .withTarget(target)
    .height(8)
    .span(12);
}

/** Raw log lines from Loki. */
export function logs(title: string, description: string, expr: string): cog.Builder<dashboard.Panel> {
  return new LogsPanel()
    .title(title)
    .description(description)
    .datasource(LOKI)
    .withTarget(new LokiQuery().expr(expr).refId("A").maxLines(200))
    .showTime(true)
    .wrapLogMessage(true)
    .enableLogDetails(true)
    .height(10)
    .span(24);
}

/** A Markdown note, for what a panel cannot show yet and why. */
export function note(title: string, markdown: string): cog.Builder<dashboard.Panel> {
  return new TextPanel().title(title).content(markdown).height(4).span(24);
}

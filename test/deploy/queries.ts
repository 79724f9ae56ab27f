// Every query sf2loki ships, with where it comes from and which language it is in: the generated
// dashboards' panel targets, the Prometheus rule files and the Loki ruler files. Grafana template
// variables are interpolated the way Grafana does before it parses a query.
import { readdirSync, readFileSync } from "node:fs";
import { parse } from "yaml";

export const GRAFANA_DIR = new URL("../../deploy/grafana/", import.meta.url);
export const PROM_RULE_FILES = [
  "rules/prometheus/sf2loki-recording.yaml",
  "rules/prometheus/sf2loki-alerts.yaml",
];
export const LOKI_RULE_FILES = ["rules/loki/sf2loki-loki-rules.yaml"];

export interface Query {
  /** `<file> <panel or rule>`, for failure messages. */
  where: string;
  language: "promql" | "logql";
  expr: string;
  /** Set for rules: the alert or recording rule name. */
  rule?: {
    alert?: string;
    record?: string;
    /** An alert's `for`; unset, it fires at the first evaluation that finds it true. */
    for?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
}

interface Panel {
  title?: string;
  datasource?: { type?: string };
  targets?: { expr?: string; datasource?: { type?: string } }[];
  panels?: Panel[];
}

/** Panel targets of one dashboard JSON (rows' nested panels included). */
export function dashboardQueries(file: string, dashboard: { panels?: Panel[] }): Query[] {
  const out: Query[] = [];
  const visit = (panels: readonly Panel[]): void => {
    for (const p of panels) {
      for (const t of p.targets ?? []) {
        if (t.expr === undefined) continue;
        const type = t.datasource?.type ?? p.datasource?.type;
        if (type !== "prometheus" && type !== "loki")
          throw new Error(`${file} "${p.title ?? "?"}": a query on datasource type ${String(type)}`);
        out.push({
          where: `${file} "${p.title ?? "?"}"`,
          language: type === "loki" ? "logql" : "promql",
          expr: t.expr,
        });
      }
      visit(p.panels ?? []);
    }
  };
  visit(dashboard.panels ?? []);
  return out;
}

export function shippedDashboards(): Record<string, { panels?: Panel[] }> {
  const dir = new URL("dashboards/", GRAFANA_DIR);
  return Object.fromEntries(
    readdirSync(dir)
      .filter((f) => f.endsWith(".json"))
      .map((f) => [f, JSON.parse(readFileSync(new URL(f, dir), "utf8")) as { panels?: Panel[] }]),
  );
}

interface RuleFile {
  groups: {
    name: string;
    rules: {
      alert?: string;
      record?: string;
      for?: string;
      expr: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }[];
  }[];
}

export function ruleQueries(file: string, language: Query["language"]): Query[] {
  const doc = parse(readFileSync(new URL(file, GRAFANA_DIR), "utf8")) as RuleFile;
  return doc.groups.flatMap((g) =>
    g.rules.map((r) => ({
      where: `${file} ${r.alert ?? r.record ?? "?"}`,
      language,
      expr: r.expr,
      rule: {
        ...(r.alert && { alert: r.alert }),
        ...(r.record && { record: r.record }),
        ...(r.for && { for: r.for }),
        ...(r.labels && { labels: r.labels }),
        ...(r.annotations && { annotations: r.annotations }),
      },
    })),
  );
}

export function allShippedQueries(): Query[] {
  return [
    ...Object.entries(shippedDashboards()).flatMap(([f, d]) => dashboardQueries(f, d)),
    ...PROM_RULE_FILES.flatMap((f) => ruleQueries(f, "promql")),
    ...LOKI_RULE_FILES.flatMap((f) => ruleQueries(f, "logql")),
  ];
}

/** Grafana's interval and range variables become a duration, as Grafana substitutes them before a query runs. */
export function interpolate(expr: string): string {
  return expr.replace(/\$__(auto|range|interval|rate_interval)\b/g, "5m");
}

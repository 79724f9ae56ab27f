// The promtool unit tests of the Prometheus rules (deploy/grafana/rules/prometheus/tests/*.yaml), read
// as data: which alerts each case expects to fire or to stay quiet, and the series it feeds in.
import { readdirSync, readFileSync } from "node:fs";
import { parse } from "yaml";
import { GRAFANA_DIR } from "./queries.ts";

const TESTS_DIR = new URL("rules/prometheus/tests/", GRAFANA_DIR);

export interface PromtoolCase {
  name: string;
  input_series?: { series: string; values: string }[];
  alert_rule_test?: { eval_time: string; alertname: string; exp_alerts?: unknown[] | null }[];
}

export function promtoolCases(): PromtoolCase[] {
  return readdirSync(TESTS_DIR)
    .filter((f) => f.endsWith(".yaml"))
    .flatMap((f) => (parse(readFileSync(new URL(f, TESTS_DIR), "utf8")) as { tests: PromtoolCase[] }).tests);
}

/** Alerts with no case where they fire, or none where they stay quiet. */
export function untestedAlerts(alerts: readonly string[], cases: readonly PromtoolCase[]): string[] {
  const checks = cases.flatMap((c) => c.alert_rule_test ?? []);
  const problems: string[] = [];
  for (const alert of alerts) {
    const mine = checks.filter((t) => t.alertname === alert);
    if (!mine.some((t) => (t.exp_alerts ?? []).length > 0))
      problems.push(`${alert}: no promtool case makes it fire`);
    if (!mine.some((t) => (t.exp_alerts ?? []).length === 0))
      problems.push(`${alert}: no promtool case shows it quiet`);
  }
  return problems;
}

/** A series in promtool's notation, `name{a="1",b="2"}`, as its name and labels. */
export function parseSeries(series: string): { name: string; labels: Record<string, string> } {
  const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?$/.exec(series.trim());
  if (!m) throw new Error(`not a series: ${series}`);
  const labels: Record<string, string> = {};
  for (const [, k, v] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
    labels[k!] = v!;
  return { name: m[1]!, labels };
}

// The single source of truth for metric names, assembled from what exists rather than from a list:
// the series a running daemon exports on /metrics, the instruments declared in src/, the catalogue in
// docs/metrics.md and the recording rules we ship. checkQueries() says which query names a metric or
// label outside it.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { LABEL_ALLOWLIST } from "../../src/sinks/receiving-loki/labels.ts";
import { logqlStreamLabels, promqlNames } from "./query-syntax.ts";
import type { Query } from "./queries.ts";

const SRC = new URL("../../src/", import.meta.url).pathname;
const METRICS_DOC = new URL("../../docs/metrics.md", import.meta.url);

/** Labels Prometheus attaches to every scraped series. */
const TARGET_LABELS = ["job", "instance"];

/** Series Prometheus makes itself for every target: a rule may read them beside the daemon's. */
const PROMETHEUS_SERIES = new Set(["up"]);

/** Prometheus exposition text → metric name → label names seen on its samples. */
export function parseExposition(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s/.exec(line);
    if (!m) throw new Error(`unparseable exposition line: ${line}`);
    const labels = out.get(m[1]!) ?? new Set<string>();
    for (const [, name] of (m[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="(?:[^"\\]|\\.)*"/g))
      labels.add(name!);
    out.set(m[1]!, labels);
  }
  return out;
}

/** Histogram bucket series → the `le` bounds /metrics shows for it. */
export function bucketBounds(text: string): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const [, name, le] of text.matchAll(/^([a-zA-Z_:][a-zA-Z0-9_:]*_bucket)\{.*?\ble="([^"]*)"/gm)) {
    const bounds = out.get(name!) ?? new Set<string>();
    bounds.add(le!);
    out.set(name!, bounds);
  }
  return out;
}

/** `state`: a StateGauge, the time of the last event of a kind (exported from its first event). */
type Kind = "counter" | "histogram" | "gauge" | "state";

/** Every sf2loki_* instrument created in src/, by base name. */
export function declaredInstruments(): Map<string, Kind> {
  const out = new Map<string, Kind>();
  const walk = (dir: string): void => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, e.name);
      if (e.isDirectory()) walk(path);
      else if (e.name.endsWith(".ts")) {
        const code = readFileSync(path, "utf8");
        for (const [, fn, name] of code.matchAll(/create(\w+)\(\s*"(sf2loki_\w+)"/g)) {
          out.set(name!, fn!.endsWith("Counter") ? "counter" : fn === "Histogram" ? "histogram" : "gauge");
        }
        for (const [, name] of code.matchAll(/new StateGauge\(\s*[^,]+,\s*"(sf2loki_\w+)"/g))
          out.set(name!, "state");
        for (const [, name] of code.matchAll(/hotPathHistogram\(\s*[^,]+,\s*"(sf2loki_\w+)"/g))
          out.set(name!, "histogram");
      }
    }
  };
  walk(SRC);
  return out;
}

/** The names Prometheus shows for an instrument (OpenTelemetry's Prometheus naming). */
export function expositionNames(base: string, kind: Kind): string[] {
  if (kind === "counter") return [`${base}_total`];
  if (kind === "histogram") return [`${base}_bucket`, `${base}_sum`, `${base}_count`];
  return [base];
}

/**
 * docs/metrics.md's tables: documented name → its attributes. A cell may list several names, later
 * ones as a suffix shorthand (`sf2loki_auth_refreshes` / `sf2loki_auth_errors`,
 * `sf2loki_apexlog_logs_ingested` / `_download_bytes`); a shorthand is resolved against `known`.
 */
export function documentedMetrics(
  known: ReadonlySet<string>,
  doc: string = readFileSync(METRICS_DOC, "utf8"),
): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const line of doc.split("\n")) {
    // `\|` inside a cell is a value separator (`outcome` = `success` \| `retried`), not a column.
    const cells = line.split(/(?<!\\)\|/).map((c) => c.trim());
    if (cells.length < 5 || !cells[1]!.startsWith("`sf2loki_")) continue;
    const names = [...cells[1]!.matchAll(/`([a-z0-9_]+)`/g)].map((m) => m[1]!);
    // A label opens the cell, a comma-separated item or a parenthesis (`(`org` under sharding)`);
    // values after `=` or `\|`, and names inside remarks ("the destination's `tenant_id`"), are not labels.
    const attrs = new Set([...cells[3]!.matchAll(/(?:^|,\s*|\(\s*)`([a-z_]+)`/g)].map((m) => m[1]!));
    const first = names[0]!;
    for (const n of names) {
      let name = n;
      if (n.startsWith("_")) {
        const parts = first.split("_");
        const candidates = parts.map((_, i) => parts.slice(0, parts.length - i).join("_") + n);
        name = candidates.find((c) => known.has(c)) ?? first.replace(/_[a-z]+$/, n);
      }
      out.set(name, attrs);
    }
  }
  return out;
}

export interface Catalogue {
  /** Exposition name → label names, from a live daemon's /metrics. */
  exported: Map<string, Set<string>>;
  /** Histogram bucket series → its `le` bounds, from the same scrape. */
  buckets: Map<string, Set<string>>;
  /** Exposition name → base name, for every instrument declared in src/. */
  declared: Map<string, string>;
  /** Base name → documented attributes. */
  documented: Map<string, Set<string>>;
  /** Recording rule name → the labels its expression keeps. */
  recorded: Map<string, Set<string>>;
  /**
   * The "last X at" gauges (StateGauge): a timestamp of an event cannot be exported before the event
   * (a 0 would read as 1970), so a query may name them before they appear.
   */
  stateGauges: Set<string>;
}

export function buildCatalogue(scrape: string, recordingRules: readonly Query[]): Catalogue {
  const instruments = declaredInstruments();
  const declared = new Map<string, string>();
  for (const [base, kind] of instruments) for (const n of expositionNames(base, kind)) declared.set(n, base);
  const recorded = new Map<string, Set<string>>();
  for (const r of recordingRules) {
    if (r.rule?.record) recorded.set(r.rule.record, new Set(promqlNames(r).groupingLabels));
  }
  return {
    exported: parseExposition(scrape),
    buckets: bucketBounds(scrape),
    declared,
    documented: documentedMetrics(new Set(instruments.keys())),
    recorded,
    stateGauges: new Set([...instruments].filter(([, kind]) => kind === "state").map(([base]) => base)),
  };
}

/** The labels a query may use on `metric`. */
function labelsOf(c: Catalogue, metric: string): Set<string> {
  const base = c.declared.get(metric);
  return new Set([
    ...TARGET_LABELS,
    ...(c.exported.get(metric) ?? []),
    ...(base ? (c.documented.get(base) ?? []) : []),
    ...(metric.endsWith("_bucket") ? ["le"] : []),
    ...(c.recorded.get(metric) ?? []),
  ]);
}

/**
 * Problems with the names in `queries`. Rules and dashboards must only read series a healthy daemon
 * exports from start-up (else an alert goes silent instead of firing, and a panel reads "No data").
 * Labels must be exported or documented for the metric they filter or group; Loki stream selectors
 * may only use the labels sf2loki sends.
 */
export function checkQueries(queries: readonly Query[], c: Catalogue): string[] {
  const problems: string[] = [];
  for (const q of queries) {
    if (q.language === "logql") {
      for (const l of logqlStreamLabels(q))
        if (!LABEL_ALLOWLIST.includes(l))
          problems.push(`${q.where}: stream label '${l}' is not one sf2loki sends`);
      continue;
    }
    const { selectors, groupingLabels } = promqlNames(q);
    const usable = new Set<string>();
    for (const s of selectors) {
      if (s.metric.includes(":")) {
        if (!c.recorded.has(s.metric))
          problems.push(`${q.where}: '${s.metric}' is no recording rule we ship`);
      } else if (
        !c.exported.has(s.metric) &&
        !c.stateGauges.has(s.metric) &&
        !PROMETHEUS_SERIES.has(s.metric)
      ) {
        // A rule could never see it; a panel reads "No data" on a healthy daemon, which an operator
        // cannot tell from a broken query (#29): every series a query names is exported from start-up.
        problems.push(
          c.declared.has(s.metric)
            ? `${q.where}: '${s.metric}' is not exported by a healthy daemon from start-up`
            : `${q.where}: '${s.metric}' is not a metric sf2loki exports`,
        );
      }
      const allowed = labelsOf(c, s.metric);
      for (const l of s.labels)
        if (!allowed.has(l)) problems.push(`${q.where}: '${s.metric}' has no label '${l}'`);
      for (const l of allowed) usable.add(l);
    }
    for (const l of groupingLabels)
      if (!usable.has(l)) problems.push(`${q.where}: groups by '${l}', which none of its metrics carries`);
  }
  return problems;
}

/**
 * Problems with series fed to the promtool tests: each must be one a daemon exports (or Prometheus
 * makes, like `up`), with labels it carries and, for a histogram bucket, an `le` it has; else a
 * test proves an alert fires on data the daemon never sends.
 */
export function seriesProblems(
  series: readonly { where: string; name: string; labels: Record<string, string> }[],
  c: Catalogue,
): string[] {
  const problems: string[] = [];
  for (const s of series) {
    const known = c.exported.has(s.name) || c.stateGauges.has(s.name) || PROMETHEUS_SERIES.has(s.name);
    if (!known) {
      problems.push(`${s.where}: '${s.name}' is not a series the daemon exports`);
      continue;
    }
    const allowed = PROMETHEUS_SERIES.has(s.name) ? new Set(TARGET_LABELS) : labelsOf(c, s.name);
    for (const l of Object.keys(s.labels))
      if (!allowed.has(l)) problems.push(`${s.where}: '${s.name}' has no label '${l}'`);
    const le = s.labels.le;
    if (le !== undefined && !(c.buckets.get(s.name)?.has(le) ?? false))
      problems.push(`${s.where}: '${s.name}' has no bucket le="${le}"`);
  }
  return problems;
}

/** Where docs/metrics.md and the code disagree. */
export function docsDrift(c: Catalogue): string[] {
  const problems: string[] = [];
  const bases = new Set(c.declared.values());
  for (const base of bases)
    if (!c.documented.has(base)) problems.push(`docs/metrics.md does not list ${base}, which src/ creates`);
  for (const base of c.documented.keys())
    if (!bases.has(base)) problems.push(`docs/metrics.md lists ${base}, which src/ never creates`);
  for (const [name, labels] of c.exported) {
    if (!name.startsWith("sf2loki_")) continue;
    const base = c.declared.get(name);
    if (base === undefined) {
      problems.push(`/metrics exports ${name}, which no src/ instrument declares`);
      continue;
    }
    const documented = c.documented.get(base) ?? new Set();
    for (const l of labels)
      if (!documented.has(l) && !(l === "le" && name.endsWith("_bucket")))
        problems.push(`${name} carries '${l}', which docs/metrics.md does not list for ${base}`);
  }
  return problems;
}

// Parses queries with the grammars Grafana's own editors use: @prometheus-io/lezer-promql and
// @grafana/lezer-logql. A parse with error nodes is a query Grafana or the ruler would reject.
import { parser as logqlParser } from "@grafana/lezer-logql";
import { parser as promqlParser } from "@prometheus-io/lezer-promql";
import { parseDuration } from "../../src/config/duration.ts";
import { interpolate, type Query } from "./queries.ts";

type Tree = ReturnType<typeof promqlParser.parse>;

export function parseQuery(q: Query): { tree: Tree; text: string; errors: string[] } {
  const text = interpolate(q.expr);
  const tree = (q.language === "promql" ? promqlParser : logqlParser).parse(text);
  const errors: string[] = [];
  tree.iterate({
    enter: (n) => {
      if (n.type.isError)
        errors.push(`syntax error at ${n.from}: …${text.slice(Math.max(0, n.from - 20), n.from + 20)}…`);
    },
  });
  return { tree, text, errors };
}

export interface PromSelector {
  metric: string;
  labels: string[];
}

/** PromQL: each vector selector's metric and matcher labels, and every label named in by/without/on/ignoring. */
export function promqlNames(q: Query): { selectors: PromSelector[]; groupingLabels: string[] } {
  const { tree, text } = parseQuery(q);
  const selectors: PromSelector[] = [];
  const groupingLabels: string[] = [];
  const cursor = tree.cursor();
  do {
    if (cursor.name === "VectorSelector") {
      const node = cursor.node;
      const id = node.getChild("Identifier");
      const matchers = node.getChild("LabelMatchers");
      const labels = matchers
        ? matchers.getChildren("UnquotedLabelMatcher").flatMap((m) => {
            const name = m.getChild("LabelName");
            return name ? [text.slice(name.from, name.to)] : [];
          })
        : [];
      selectors.push({ metric: id ? text.slice(id.from, id.to) : "", labels });
    } else if (cursor.name === "GroupingLabels") {
      for (const l of cursor.node.getChildren("LabelName")) groupingLabels.push(text.slice(l.from, l.to));
    }
  } while (cursor.next());
  return { selectors, groupingLabels };
}

/** LogQL: the label names of every stream selector. */
export function logqlStreamLabels(q: Query): string[] {
  const { tree, text } = parseQuery(q);
  const labels: string[] = [];
  const cursor = tree.cursor();
  do {
    if (cursor.name === "Selector") {
      const inner = cursor.node.cursor();
      do {
        if (inner.name === "Matcher") {
          const id = inner.node.getChild("Identifier");
          if (id) labels.push(text.slice(id.from, id.to));
        }
      } while (inner.next() && inner.to <= cursor.to);
    }
  } while (cursor.next());
  return [...new Set(labels)];
}

/** One `{selector} ... [range]` of a LogQL metric query: the selector's equality matchers and the range. */
export interface LogRange {
  /** label → value of each `=` matcher (`source`, `event_type`, ...). */
  matchers: Record<string, string>;
  /** The range in milliseconds; undefined when it is a Grafana variable left as is. */
  rangeMs: number | undefined;
}

/**
 * LogQL: each log range's selector and range, and the names the query reads from log lines (after
 * `| json`: label filters, `unwrap`, `by`/`without`), stream labels and `__error__` left out.
 */
export function logqlShape(
  q: Query,
  streamLabels: readonly string[],
): { ranges: LogRange[]; fields: string[] } {
  const { tree, text } = parseQuery(q);
  const ranges: LogRange[] = [];
  const fields = new Set<string>();
  const cursor = tree.cursor();
  const inSelector: number[] = [];
  do {
    const node = cursor.node;
    if (cursor.name === "LogRangeExpr") {
      const matchers = Object.fromEntries(selectorMatchers(node, text));
      const duration = node.getChild("Range")?.getChild("Duration");
      ranges.push({
        matchers,
        rangeMs: duration ? parseDuration(text.slice(duration.from, duration.to)) : undefined,
      });
    } else if (cursor.name === "Selector") {
      inSelector.push(cursor.to);
    } else if (cursor.name === "Identifier") {
      while (inSelector.length > 0 && cursor.from >= inSelector.at(-1)!) inSelector.pop();
      const name = text.slice(cursor.from, cursor.to);
      if (inSelector.length === 0 && name !== "__error__" && !streamLabels.includes(name)) fields.add(name);
    }
  } while (cursor.next());
  return { ranges, fields: [...fields] };
}

/** The `label="value"` matchers of a LogRangeExpr's selector. */
function selectorMatchers(logRange: Tree["topNode"], text: string): [string, string][] {
  const out: [string, string][] = [];
  const selector = logRange.getChild("Selector");
  if (!selector) return out;
  const c = selector.cursor();
  do {
    if (c.name !== "Matcher" || !c.node.getChild("Eq")) continue;
    const id = c.node.getChild("Identifier");
    const value = c.node.getChild("String");
    if (id && value)
      out.push([text.slice(id.from, id.to), JSON.parse(text.slice(value.from, value.to)) as string]);
  } while (c.next() && c.from < selector.to);
  return out;
}

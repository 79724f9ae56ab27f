// Parses queries with the grammars Grafana's own editors use: @prometheus-io/lezer-promql and
// @grafana/lezer-logql. A parse with error nodes is a query Grafana or the ruler would reject.
import { parser as logqlParser } from "@grafana/lezer-logql";
import { parser as promqlParser } from "@prometheus-io/lezer-promql";
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

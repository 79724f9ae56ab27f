// Counting entries that will never be delivered (spec B §2.7, OPEN #145): one counter add per
// (reason, source, event_type, org) group, attributes taken from the entries' labels and omitted
// when a label is absent.
import type { Counter } from "@opentelemetry/api";
import type { LogEntry } from "../model.ts";

const ABSENT = "\u0001";

export function countDropped(counter: Counter, entries: readonly LogEntry[], reason: string): void {
  const groups = new Map<string, { attrs: Record<string, string>; n: number }>();
  for (const entry of entries) {
    const { source, event_type, org } = entry.labels;
    const key = `${source ?? ABSENT}\u0000${event_type ?? ABSENT}\u0000${org ?? ABSENT}`;
    const group = groups.get(key);
    if (group) {
      group.n++;
      continue;
    }
    const attrs: Record<string, string> = { reason };
    if (source !== undefined) attrs.source = source;
    if (event_type !== undefined) attrs.event_type = event_type;
    if (org !== undefined) attrs.org = org;
    groups.set(key, { attrs, n: 1 });
  }
  for (const { attrs, n } of groups.values()) counter.add(n, attrs);
}

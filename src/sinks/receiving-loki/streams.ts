// Groups a batch into Loki streams by exact label set, shared by both wire encodings.
import { sameLabelSet, type Batch, type LogEntry, type Labels } from "../../model.ts";
import { renderLabels } from "./labels.ts";

export interface StreamGroup {
  /** Rendered `{k="v",...}`, computed once per distinct label set per batch. */
  readonly labels: string;
  readonly labelSet: Labels;
  readonly entries: readonly LogEntry[];
}

/** Streams in order of first appearance; entries keep batch order inside a stream (no sorting). */
/** A stream while its batch is being grouped. */
interface Grouping extends StreamGroup {
  readonly entries: LogEntry[];
}

export function groupStreams(batch: Batch): StreamGroup[] {
  // One label object for the whole batch (the producer shares one per run of equal sets): one stream,
  // the batch itself.
  const first = batch[0]?.labels;
  let shared = first !== undefined;
  for (let i = 1; shared && i < batch.length; i++) shared = batch[i]!.labels === first;
  if (shared) return [{ labels: renderLabels(first!), labelSet: first!, entries: batch }];
  const byRendered = new Map<string, Grouping>();
  // Runs of one label set are the common case: an entry whose set equals the previous entry's joins
  // its stream without a key being built. Otherwise entries of one source carry equal label maps
  // built in the same key order, so an unsorted, unescaped key finds the stream without rendering;
  // a miss renders once per distinct raw key.
  const byRaw = new Map<string, Grouping>();
  const groups: Grouping[] = [];
  let lastLabels: Labels | undefined;
  let lastGroup: Grouping | undefined;
  for (const entry of batch) {
    const labels = entry.labels;
    if (lastGroup && lastLabels && sameLabelSet(labels, lastLabels)) {
      lastGroup.entries.push(entry);
      continue;
    }
    let raw = "";
    for (const k of Object.keys(labels)) {
      const v = labels[k]!;
      raw += `${k.length}:${k}${v.length}:${v}`; // length-prefixed, so no two label maps collide
    }
    let group = byRaw.get(raw);
    if (!group) {
      const rendered = renderLabels(labels);
      group = byRendered.get(rendered);
      if (!group) {
        group = { labels: rendered, labelSet: labels, entries: [] };
        byRendered.set(rendered, group);
        groups.push(group);
      }
      byRaw.set(raw, group);
    }
    group.entries.push(entry);
    lastLabels = labels;
    lastGroup = group;
  }
  return groups;
}

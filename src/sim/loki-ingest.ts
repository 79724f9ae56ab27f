// Validates decoded streams like Loki's distributor and stores what passes. Like Loki, acceptance
// is per entry: valid entries of a request are kept even when others in it are refused.
import type { DecodedStream } from "./loki-decode.ts";
import { LabelSyntaxError, canonicalLabels, labelSetProblem, parseLabelSelector } from "./loki-labels.ts";
import type { AcceptedStore, LabelMap } from "./loki-store.ts";
import type { PoisonRule } from "./loki-faults.ts";

export interface IngestLimits {
  maxLineBytes: number;
  /** Per-stream out-of-order window in ms; undefined accepts any order (Loki's current default). */
  outOfOrderWindowMs: number | undefined;
  poison: PoisonRule | undefined;
}

export interface IngestResult {
  accepted: number;
  rejected: number;
  /** Worst status among refusals (413 beats 400); 204 when all entries were accepted. */
  status: number;
  errors: string[];
}

function resolveLabels(labels: string | LabelMap): LabelMap {
  return typeof labels === "string" ? parseLabelSelector(labels) : labels;
}

export function ingest(streams: DecodedStream[], store: AcceptedStore, limits: IngestLimits): IngestResult {
  const result: IngestResult = { accepted: 0, rejected: 0, status: 204, errors: [] };
  const refuse = (status: number, message: string, count = 1): void => {
    result.rejected += count;
    result.errors.push(message);
    if (result.status === 204 || status > result.status) result.status = status;
  };
  const windowNs =
    limits.outOfOrderWindowMs === undefined ? undefined : BigInt(Math.round(limits.outOfOrderWindowMs * 1e6));
  for (const stream of streams) {
    let labels: LabelMap;
    try {
      labels = resolveLabels(stream.labels);
    } catch (err) {
      if (!(err instanceof LabelSyntaxError)) throw err;
      refuse(400, `stream ${JSON.stringify(stream.labels)}: ${err.message}`, stream.entries.length);
      continue;
    }
    const problem = labelSetProblem(labels);
    if (problem !== undefined) {
      refuse(400, `stream ${canonicalLabels(labels)}: ${problem}`, stream.entries.length);
      continue;
    }
    const key = canonicalLabels(labels);
    const name = typeof stream.labels === "string" ? stream.labels : key;
    for (const entry of stream.entries) {
      const lineBytes = Buffer.byteLength(entry.line, "utf8");
      if (lineBytes > limits.maxLineBytes) {
        refuse(
          400,
          `Max entry size '${limits.maxLineBytes}' bytes exceeded for stream '${name}' while adding an ` +
            `entry with length '${lineBytes}' bytes`,
        );
        continue;
      }
      if (limits.poison && entry.line.includes(limits.poison.marker)) {
        refuse(
          limits.poison.status,
          `entry for stream '${name}' at ${entry.timestampNs} contains the poison marker ${JSON.stringify(limits.poison.marker)}`,
        );
        continue;
      }
      if (windowNs !== undefined) {
        const newest = store.maxTimestamp(labels);
        if (newest !== undefined && entry.timestampNs < newest - windowNs) {
          refuse(
            400,
            `entry for stream '${name}' has timestamp too old: ${entry.timestampNs}, newest ${newest}`,
          );
          continue;
        }
      }
      store.add(labels, entry.timestampNs, entry.line, entry.metadata, key);
      result.accepted++;
    }
  }
  return result;
}

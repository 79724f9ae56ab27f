// Byte accounting (spec B §2.5, §2.6). Each figure is computed once per entry and carried with it.
import type { Labels, LogEntry } from "../model.ts";

/** Fixed per-entry overhead in both the queue cost and the batch size estimate. */
export const ENTRY_OVERHEAD_BYTES = 64;

/** Σ(len(k) + len(v)) in characters: a cheap approximation of a map's memory. */
export function mapChars(map: Labels): number {
  let n = 0;
  for (const k in map) n += k.length + map[k]!.length;
  return n;
}

/**
 * Queue cost of a real entry: line bytes + overhead + labels + metadata + checkpoint value. The
 * checkpoint string matters: polling checkpoints embed id windows of several KB. `labelsChars` is
 * passed in because producers cache it per shared labels object.
 */
export function entryCost(entry: LogEntry, labelsChars: number): number {
  return (
    entry.lineBytes + ENTRY_OVERHEAD_BYTES + labelsChars + entry.metadataChars + entry.checkpoint.value.length
  );
}

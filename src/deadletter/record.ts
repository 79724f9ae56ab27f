// Turning a refused group into records, and records into JSON lines and back. One encoding for every
// backend, so a file segment and an object hold the same lines and `jq` reads both.
import type { DeadLetterGroup } from "../pipeline/dead-letters.ts";
import type { Clock } from "../util/clock.ts";
import type { DeadLetterRecord, DeadLetterUsage } from "./types.ts";

/**
 * `<ms since epoch, base 36, 9 digits>-<8 hex random>-<index in group>`: ids sort by the time they
 * were kept, and two groups in one millisecond (or two processes) do not collide.
 */
/** Mixed into the random part: two groups of one process in one millisecond never collide. */
let groupSeq = 0;

export function newGroupId(clock: Clock): string {
  const time = clock.now().toString(36).padStart(9, "0");
  const rand = ((Math.floor(clock.random() * 0x1_0000_0000) + groupSeq++) >>> 0)
    .toString(16)
    .padStart(8, "0");
  return `${time}-${rand}`;
}

export function toRecords(group: DeadLetterGroup, clock: Clock): DeadLetterRecord[] {
  const groupId = newGroupId(clock);
  const at = new Date(clock.now()).toISOString();
  return group.entries.map((entry, i) => ({
    id: `${groupId}-${i}`,
    dead_lettered_at: at,
    reason: group.reason,
    detail: group.detail,
    org: entry.labels.org ?? null,
    checkpoint_key: entry.checkpoint.key,
    labels: { ...entry.labels },
    timestamp_ns: entry.timestampNs.toString(),
    line: entry.line,
    structured_metadata: { ...entry.structuredMetadata },
  }));
}

export function encodeRecords(records: readonly DeadLetterRecord[]): string {
  let out = "";
  for (const r of records) out += JSON.stringify(r) + "\n";
  return out;
}

/**
 * Every well-formed record in `text`. A line that does not parse (the torn tail of an append cut by a
 * crash) is skipped and counted, never fatal: the rest of the store stays readable.
 */
export function decodeRecords(text: string): { records: DeadLetterRecord[]; unreadable: number } {
  const records: DeadLetterRecord[] = [];
  let unreadable = 0;
  for (const line of text.split("\n")) {
    if (line.trim() === "") continue;
    try {
      const r = JSON.parse(line) as Partial<DeadLetterRecord>;
      if (typeof r.id === "string" && typeof r.line === "string" && typeof r.timestamp_ns === "string")
        records.push(r as DeadLetterRecord);
      else unreadable++;
    } catch {
      unreadable++;
    }
  }
  return { records, unreadable };
}

/** Bytes the record takes in the store (its JSON line). */
export function recordBytes(record: DeadLetterRecord): number {
  return Buffer.byteLength(JSON.stringify(record), "utf8") + 1;
}

/**
 * One stored unit (a file segment, an object) after a remove-or-update: the records it keeps (updated
 * ones replaced), how many it lost, and whether it must be rewritten at all.
 */
export function applyChanges(
  records: readonly DeadLetterRecord[],
  remove: ReadonlySet<string>,
  update: ReadonlyMap<string, DeadLetterRecord>,
): { kept: DeadLetterRecord[]; removed: number; changed: boolean } {
  const kept: DeadLetterRecord[] = [];
  let removed = 0;
  let replaced = 0;
  for (const r of records) {
    if (remove.has(r.id)) {
      removed++;
      continue;
    }
    const next = update.get(r.id);
    if (next) replaced++;
    kept.push(next ?? r);
  }
  return { kept, removed, changed: removed + replaced > 0 };
}

/** What a store holds, summed over its units (file segments or objects). */
export function usageOf(units: readonly DeadLetterUsage[]): DeadLetterUsage {
  let bytes = 0;
  let entries = 0;
  for (const u of units) {
    bytes += u.bytes;
    entries += u.entries;
  }
  return { bytes, entries };
}

// The EventLogFile checkpoint (spec A §7.6): `{"ids": [[fileId, CreatedDate], ...], "last_created":
// "<CreatedDate as listed>"}`, keys sorted, Python spacing, so a Python sf2loki reads ours and we
// read theirs. Decoding never throws (#103): junk becomes the lookback default with a warning.
import type { Logger } from "../../obs/logger.ts";
import { isValidTimestamp, parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";
import { canonicalJson } from "../shaping/json.ts";

/** A processed file: `[id, created]`, or a legacy bare id (created unknown: matches any date). */
export type ProcessedFile = readonly [id: string, created: string | null];

export interface ElfCursor {
  /** Undefined: nothing stored (or unusable), so `since` is the lookback default. */
  readonly lastCreated: string | undefined;
  readonly files: readonly ProcessedFile[];
}

export const EMPTY_ELF_CURSOR: ElfCursor = { lastCreated: undefined, files: [] };

/** Older pairs kept besides those at the watermark; and the size that earns a warning. */
const OLDER_KEPT = 200;
const WARN_ABOVE = 5_000;

export function parseElfCheckpoint(value: string | undefined, log: Logger, key: string): ElfCursor {
  if (value === undefined || value === "") return EMPTY_ELF_CURSOR;
  let parsed: unknown;
  try {
    parsed = JSON.parse(value);
  } catch {
    parsed = value; // a bare timestamp, as the `state set` runbook writes it
  }
  let lastCreated: unknown;
  const files: ProcessedFile[] = [];
  if (parsed !== null && typeof parsed === "object" && !Array.isArray(parsed)) {
    const obj = parsed as Record<string, unknown>;
    lastCreated = obj.last_created;
    if (Array.isArray(obj.ids)) {
      for (const item of obj.ids as unknown[]) {
        if (typeof item === "string") files.push([item, null]);
        else if (Array.isArray(item) && typeof item[0] === "string") {
          files.push([item[0], typeof item[1] === "string" ? item[1] : null]);
        }
      }
    }
  } else {
    lastCreated = typeof parsed === "string" ? parsed : String(parsed);
  }
  if (!isValidTimestamp(lastCreated)) {
    log.warn(
      { key, stored: value.slice(0, 120) },
      "stored EventLogFile watermark is not a timestamp; falling back to the lookback window",
    );
    lastCreated = undefined;
  }
  return { lastCreated: lastCreated as string | undefined, files };
}

export function serialiseElfCheckpoint(c: ElfCursor, sinceDefault: string): string {
  return canonicalJson({
    ids: c.files.map(([id, created]) => (created === null ? id : [id, created])),
    last_created: c.lastCreated ?? sinceDefault,
  });
}

/** Id -> recorded CreatedDate (null for legacy entries); the last pair for an Id wins. */
export function processedIndex(c: ElfCursor): Map<string, string | null> {
  return new Map(c.files.map(([id, created]) => [id, created]));
}

/**
 * Already ingested: the Id is known and the listed CreatedDate is not newer than the recorded one.
 * A newer CreatedDate is a Daily file Salesforce regenerated in place: reprocess it.
 */
export function alreadyProcessed(index: Map<string, string | null>, id: string, created: string): boolean {
  if (!index.has(id)) return false;
  const recorded = index.get(id);
  if (recorded === null || recorded === undefined || recorded === created) return true;
  const a = parseSfTimestampNs(created);
  const b = parseSfTimestampNs(recorded);
  return a !== undefined && b !== undefined && a <= b;
}

/**
 * The cursor after `file`: its pair appended (replacing an older pair for the same Id), every pair
 * at the new watermark kept (the next `>=` listing returns all of them), older ones capped at 200.
 */
export function foldProcessed(
  c: ElfCursor,
  id: string,
  created: string,
  log: Logger,
  key: string,
): ElfCursor {
  const createdNs = parseSfTimestampNs(created);
  const currentNs = c.lastCreated === undefined ? undefined : parseSfTimestampNs(c.lastCreated);
  const lastCreated =
    currentNs === undefined || (createdNs !== undefined && createdNs >= currentNs) ? created : c.lastCreated!;
  const wmNs = parseSfTimestampNs(lastCreated);
  const all: ProcessedFile[] = [...c.files.filter(([fid]) => fid !== id), [id, created]];
  const atWatermark = (f: ProcessedFile): boolean =>
    f[1] !== null && (f[1] === lastCreated || (wmNs !== undefined && parseSfTimestampNs(f[1]) === wmNs));
  let older = all.filter((f) => !atWatermark(f)).length;
  const files = all.filter((f) => atWatermark(f) || older-- <= OLDER_KEPT);
  if (files.length > WARN_ABOVE && c.files.length <= WARN_ABOVE) {
    log.warn(
      { key, files: files.length },
      "more than 5000 EventLogFiles share one CreatedDate; the checkpoint grows with them",
    );
  }
  return { lastCreated, files };
}

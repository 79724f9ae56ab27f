// The backfill checkpoint, in the Python format so either implementation resumes the other's run:
// key `backfill:<interval>:<EventType>` (`backfill:org=<name>:...` for a named org), value
// `{"done_ids": [...], "last_created": "<CreatedDate as listed>"}` with sorted keys. `done_ids` holds
// the files already pushed at exactly `last_created`; a newer CreatedDate resets it.
import type { Logger } from "../obs/logger.ts";
import { canonicalJson } from "../sources/shaping/json.ts";

export interface BackfillCursor {
  readonly lastCreated: string | undefined;
  readonly doneIds: ReadonlySet<string>;
}

export const EMPTY_CURSOR: BackfillCursor = { lastCreated: undefined, doneIds: new Set() };

export function backfillKey(orgName: string, interval: string, name: string): string {
  return orgName === "" ? `backfill:${interval}:${name}` : `backfill:org=${orgName}:${interval}:${name}`;
}

/** The unprefixed key the first configured org falls back to (a single-org run before the split). */
export function legacyKey(interval: string, name: string): string {
  return `backfill:${interval}:${name}`;
}

export function parseCursor(value: string | undefined, log: Logger, key: string): BackfillCursor {
  if (value === undefined || value === "") return EMPTY_CURSOR;
  try {
    const parsed = JSON.parse(value) as { done_ids?: unknown; last_created?: unknown };
    const ids = Array.isArray(parsed.done_ids) ? parsed.done_ids.filter((i) => typeof i === "string") : [];
    if (typeof parsed.last_created === "string" && parsed.last_created !== "") {
      return { lastCreated: parsed.last_created, doneIds: new Set(ids) };
    }
  } catch {
    // fall through: logged below
  }
  log.warn({ key, value }, "backfill checkpoint is not {done_ids, last_created}; starting from --since");
  return EMPTY_CURSOR;
}

export function serialiseCursor(cursor: BackfillCursor): string {
  return canonicalJson({ done_ids: [...cursor.doneIds], last_created: cursor.lastCreated ?? "" });
}

/** The cursor once file (`id`, `created`) is pushed. */
export function advance(cursor: BackfillCursor, id: string, created: string): BackfillCursor {
  if (cursor.lastCreated === created)
    return { lastCreated: created, doneIds: new Set([...cursor.doneIds, id]) };
  return { lastCreated: created, doneIds: new Set([id]) };
}

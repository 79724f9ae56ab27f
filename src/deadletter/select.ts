// Which dead letters a CLI command acts on: `--since`, `--reason`, `--org`, each optional, all ANDed.
import { parseDuration } from "../config/duration.ts";
import { ConfigError } from "../errors.ts";
import type { DeadLetterRecord } from "./types.ts";

export interface SelectFlags {
  since?: string;
  reason?: string;
  org?: string;
}

export interface Selection {
  sinceMs: number | undefined;
  reason: string | undefined;
  org: string | undefined;
}

/**
 * `--since` is a time (`2026-12-01`, `2026-12-01T10:00:00Z`) or an age (`2h`, `7d`) counted back from
 * `nowMs`; anything else is a usage error naming the flag (exit 2, like a config error).
 */
export function parseSelection(flags: SelectFlags, nowMs: number): Selection {
  let sinceMs: number | undefined;
  if (flags.since !== undefined) {
    const age =
      /^\d/.test(flags.since) && !/^\d{4}-/.test(flags.since) ? parseDuration(flags.since) : undefined;
    const at = age === undefined ? Date.parse(flags.since) : nowMs - age;
    if (!Number.isFinite(at)) {
      throw new ConfigError(
        `--since '${flags.since}' is neither a time (2026-12-01, 2026-12-01T10:00:00Z) nor an age (2h, 7d)`,
      );
    }
    sinceMs = at;
  }
  return { sinceMs, reason: flags.reason, org: flags.org };
}

export function matches(record: DeadLetterRecord, s: Selection): boolean {
  if (s.reason !== undefined && record.reason !== s.reason) return false;
  if (s.org !== undefined && record.org !== s.org) return false;
  if (s.sinceMs !== undefined && Date.parse(record.dead_lettered_at) < s.sinceMs) return false;
  return true;
}

// `sf2loki backfill` flags, validated before any network call (spec C §3.7, with the FIXes of #134/#150:
// each type is checked like the config's identifiers, and `*` means "discover").
import { ConfigError } from "../errors.ts";
import type { ElfInterval } from "../salesforce/eventlogfile/listing.ts";

export interface BackfillFlags {
  since?: string;
  until?: string;
  eventTypes?: string;
  objects?: string;
  interval?: string;
  ingestTimestamps?: boolean;
  concurrency?: string;
  org?: string;
  dryRun?: boolean;
}

export interface BackfillPlan {
  sinceMs: number;
  untilMs: number | undefined;
  /** undefined: the configured explicit types, else discovery; `["*"]` given: discovery. */
  eventTypes: string[] | undefined;
  discover: boolean;
  /** SOQL-polled event objects (`--objects`); EventLogFiles are skipped when only these are given. */
  objects: string[];
  interval: ElfInterval;
  ingestTimestamps: boolean;
  concurrency: number;
  org: string | undefined;
  dryRun: boolean;
}

const IDENTIFIER = /^[A-Za-z0-9_]+$/;

export function parseDate(value: string, flag: string): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value);
  const ms = m ? Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3])) : NaN;
  if (!m || Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== value) {
    throw new ConfigError(`invalid date '${value}' for ${flag} (expected YYYY-MM-DD)`);
  }
  return ms;
}

function names(list: string | undefined, flag: string, allowWildcard: boolean): string[] | undefined {
  if (list === undefined) return undefined;
  const out = list
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
  for (const name of out) {
    if ((allowWildcard && name === "*") || IDENTIFIER.test(name)) continue;
    throw new ConfigError(`${flag}: '${name}' is not a valid name (letters, digits and _ only)`);
  }
  return out;
}

export function parsePlan(flags: BackfillFlags): BackfillPlan {
  if (flags.since === undefined) throw new ConfigError("--since YYYY-MM-DD is required");
  const sinceMs = parseDate(flags.since, "--since");
  const untilMs = flags.until === undefined ? undefined : parseDate(flags.until, "--until");
  if (untilMs !== undefined && untilMs <= sinceMs) {
    throw new ConfigError(`--until ${flags.until} must be after --since ${flags.since}`);
  }
  const interval = flags.interval ?? "Daily";
  if (interval !== "Daily" && interval !== "Hourly") {
    throw new ConfigError(`--interval must be Daily or Hourly, got '${interval}'`);
  }
  const concurrency = flags.concurrency === undefined ? 2 : Number(flags.concurrency);
  if (!Number.isInteger(concurrency)) {
    throw new ConfigError(`--concurrency must be an integer, got '${flags.concurrency ?? ""}'`);
  }
  const types = names(flags.eventTypes, "--event-types", true);
  return {
    sinceMs,
    untilMs,
    eventTypes: types?.filter((t) => t !== "*"),
    discover: types?.includes("*") ?? false,
    objects: names(flags.objects, "--objects", false) ?? [],
    interval,
    ingestTimestamps: flags.ingestTimestamps ?? false,
    concurrency: Math.max(1, concurrency),
    org: flags.org,
    dryRun: flags.dryRun ?? false,
  };
}

// What the backfill's sources share: the plan, the daemon's shaping pieces for the org, where keys
// live, the progress line and the counters the summary prints.
import type { Transforms } from "../egress/transforms.ts";
import type { Logger } from "../obs/logger.ts";
import type { ListedFile } from "../salesforce/eventlogfile/listing.ts";
import type { EventLogFileSettings } from "../sources/eventlogfile/settings.ts";
import type { EntryShaper } from "../sources/shaping/entry.ts";
import type { CheckpointReader } from "../sources/source.ts";
import type { Clock } from "../util/clock.ts";
import { backfillKey, legacyKey } from "./checkpoint.ts";
import type { EntryDecorator } from "./decorate.ts";
import type { BackfillPlan } from "./options.ts";
import type { BackfillProgress } from "./progress.ts";

export interface BackfillStats {
  /** Files handed on completely. */
  files: number;
  /** Blob downloads started (Python's `api_calls`). */
  downloads: number;
  listCalls: number;
  /** Types that stopped on a listing or download failure. */
  failedTypes: number;
}

export interface BackfillContext {
  plan: BackfillPlan;
  elf: EventLogFileSettings;
  shaper: EntryShaper;
  transforms: Transforms;
  globalFields: readonly string[];
  clock: Clock;
  log: Logger;
  keys: BackfillKeys;
  /** The backfill label or ingest clock, and the org's labels under multi-org. */
  decorate: EntryDecorator;
  progress: BackfillProgress;
  stats: BackfillStats;
  /** One operator line on stderr, prefixed `sf2loki backfill: `. */
  report: (line: string) => void;
  /** --dry-run lists each type's files. */
  onListed?: (eventType: string, files: readonly ListedFile[]) => void;
}

/**
 * The org's backfill keys under one kind (`Daily`/`Hourly` for EventLogFiles, `objects` for SOQL
 * objects); the first configured org also reads the legacy unprefixed key.
 */
export class BackfillKeys {
  readonly #org: string;
  readonly #interval: string;
  readonly #legacyFallback: boolean;

  constructor(org: string, kind: string, legacyFallback: boolean) {
    this.#org = org;
    this.#interval = kind;
    this.#legacyFallback = legacyFallback;
  }

  key(name: string): string {
    return backfillKey(this.#org, this.#interval, name);
  }

  async load(state: CheckpointReader, name: string): Promise<{ key: string; value: string | undefined }> {
    const key = this.key(name);
    const value = await state.load(key);
    if (value !== undefined || this.#org === "" || !this.#legacyFallback) return { key, value };
    return { key, value: await state.load(legacyKey(this.#interval, name)) };
  }
}

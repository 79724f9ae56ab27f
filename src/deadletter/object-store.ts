// The dead-letter store of an S3, GCS or Azure deployment: one JSON-lines object per refused group under
// a prefix next to the checkpoint object. Object names start with the group's id, so listing order is
// the order they were kept, and carry the entry count (`-n12.jsonl`) so the bound is enforced from a
// listing alone. The daemon keeps the listing in memory (re-listed every few minutes, since an
// operator's replay or purge changes it) and deletes the oldest objects past the bound.
import type { Clock } from "../util/clock.ts";
import { Mutex } from "../util/mutex.ts";
import type { FolderObject, ObjectFolder } from "./object-folder.ts";
import { applyChanges, decodeRecords, encodeRecords, usageOf } from "./record.ts";
import type {
  AppendOutcome,
  DeadLetterBounds,
  DeadLetterRecord,
  DeadLetterStore,
  DeadLetterUsage,
} from "./types.ts";

const RELIST_AFTER_MS = 5 * 60_000;
const NAME = /^([0-9a-z]{9}-[0-9a-f]{8})(?:\.[0-9a-f]{8})?-n(\d+)\.jsonl$/;
/** Objects read at once by list and rewrite. */
const READ_CONCURRENCY = 8;

interface Held {
  name: string;
  bytes: number;
  entries: number;
}

export class ObjectDeadLetterStore implements DeadLetterStore {
  readonly location: string;
  readonly #folder: ObjectFolder;
  readonly #bounds: DeadLetterBounds;
  readonly #clock: Clock;
  readonly #mutex = new Mutex();
  #held: Held[] | undefined;
  #listedAt = 0;
  #usage: DeadLetterUsage | undefined;

  constructor(folder: ObjectFolder, bounds: DeadLetterBounds, clock: Clock) {
    this.#folder = folder;
    this.location = folder.location;
    this.#bounds = bounds;
    this.#clock = clock;
  }

  usage(): DeadLetterUsage | undefined {
    return this.#usage;
  }

  append(records: readonly DeadLetterRecord[], signal: AbortSignal): Promise<AppendOutcome> {
    return this.#mutex.run(async () => {
      const held = await this.#index(signal);
      const first = records[0];
      if (!first) return { evicted: 0, usage: this.#tally(held) };
      const bytes = Buffer.from(encodeRecords(records), "utf8");
      const name = `${groupOf(first.id)}-n${records.length}.jsonl`;
      await this.#folder.put(name, bytes, signal);
      held.push({ name, bytes: bytes.byteLength, entries: records.length });
      held.sort(byName);
      let evicted = 0;
      while (held.length > 1 && this.#over(held)) {
        const oldest = held.shift()!;
        await this.#folder.delete(oldest.name, signal);
        evicted += oldest.entries;
      }
      return { evicted, usage: this.#tally(held) };
    });
  }

  refresh(signal: AbortSignal): Promise<DeadLetterUsage> {
    return this.#mutex.run(async () => usageOf(await this.#relist(signal)));
  }

  list(signal: AbortSignal): Promise<DeadLetterRecord[]> {
    return this.#mutex.run(async () => {
      const held = await this.#relist(signal);
      const groups = await mapLimited(held, (h) => this.#read(h.name, signal));
      return groups.flat();
    });
  }

  rewrite(
    remove: ReadonlySet<string>,
    update: ReadonlyMap<string, DeadLetterRecord>,
    signal: AbortSignal,
  ): Promise<number> {
    return this.#mutex.run(async () => {
      const held = await this.#relist(signal);
      let removed = 0;
      const next: Held[] = [];
      const contents = await mapLimited(held, (h) => this.#read(h.name, signal));
      for (const [i, h] of held.entries()) {
        const { kept, removed: gone, changed } = applyChanges(contents[i] ?? [], remove, update);
        removed += gone;
        if (!changed) {
          next.push(h);
          continue;
        }
        if (kept.length > 0) {
          // A new name, then the old one removed: a crash in between leaves a duplicate, never a loss.
          const bytes = Buffer.from(encodeRecords(kept), "utf8");
          const suffix = Math.floor(this.#clock.random() * 0x1_0000_0000)
            .toString(16)
            .padStart(8, "0");
          const name = `${groupOf(h.name)}.${suffix}-n${kept.length}.jsonl`;
          await this.#folder.put(name, bytes, signal);
          next.push({ name, bytes: bytes.byteLength, entries: kept.length });
        }
        await this.#folder.delete(h.name, signal);
      }
      next.sort(byName);
      this.#held = next;
      this.#tally(next);
      return removed;
    });
  }

  close(): Promise<void> {
    return this.#folder.close();
  }

  #over(held: readonly Held[]): boolean {
    const { bytes, entries } = usageOf(held);
    return (
      bytes > this.#bounds.maxBytes || (this.#bounds.maxEntries > 0 && entries > this.#bounds.maxEntries)
    );
  }

  async #index(signal: AbortSignal): Promise<Held[]> {
    if (this.#held && this.#clock.monotonic() - this.#listedAt < RELIST_AFTER_MS) return this.#held;
    return this.#relist(signal);
  }

  async #relist(signal: AbortSignal): Promise<Held[]> {
    const listed = await this.#folder.list(signal);
    const held = listed.flatMap((o) => parse(o)).sort(byName);
    this.#held = held;
    this.#listedAt = this.#clock.monotonic();
    this.#tally(held);
    return held;
  }

  async #read(name: string, signal: AbortSignal): Promise<DeadLetterRecord[]> {
    const bytes = await this.#folder.get(name, signal);
    if (!bytes) return [];
    return decodeRecords(Buffer.from(bytes).toString("utf8")).records;
  }

  #tally(held: readonly Held[]): DeadLetterUsage {
    this.#usage = usageOf(held);
    return this.#usage;
  }
}

/** The group part of a record id or an object name: `<time>-<random>`. */
function groupOf(idOrName: string): string {
  return idOrName.slice(0, 18);
}

/** Objects under the prefix that are not ours (a stray upload) are left alone and not counted. */
function parse(o: FolderObject): Held[] {
  const m = NAME.exec(o.name);
  if (!m) return [];
  return [{ name: o.name, bytes: o.bytes, entries: Number(m[2]) }];
}

function byName(a: Held, b: Held): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

async function mapLimited<T, R>(items: readonly T[], fn: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const i = next++;
      out[i] = await fn(items[i]!);
    }
  };
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, items.length) }, worker));
  return out;
}

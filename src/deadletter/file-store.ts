// The dead-letter store of a file deployment: JSON-lines segments in a directory next to the state
// file (`state.json` → `state-deadletter/0000000000000001.jsonl`, ...). The newest segment takes the
// appends; a full one is closed and a new one opened; past the bound whole segments are evicted,
// oldest first, so eviction never rewrites a file. A segment holds an eighth of the bound, so the
// store keeps between seven eighths and all of `max_bytes` (or `max_entries`) of the newest letters.
import { mkdir, open, readdir, readFile, stat, unlink } from "node:fs/promises";
import { basename, dirname, extname, join } from "node:path";
import { writeFileAtomic } from "../state/atomic-write.ts";
import { errnoCode, nodeStateFs } from "../state/state-fs.ts";
import { Mutex } from "../util/mutex.ts";
import type { Clock } from "../util/clock.ts";
import { withDirectoryLock } from "./file-lock.ts";
import { applyChanges, decodeRecords, encodeRecords, usageOf } from "./record.ts";
import type {
  AppendOutcome,
  DeadLetterBounds,
  DeadLetterRecord,
  DeadLetterStore,
  DeadLetterUsage,
} from "./types.ts";

/** Segments per bound: the granularity of eviction. */
export const SEGMENTS_PER_BOUND = 8;
const SEGMENT = /^(\d{16})\.jsonl$/;
const LOCK = ".lock";

/** `dir/state.json` → `dir/state-deadletter`; the Python version has no such directory to collide with. */
export function deadLetterDirectory(statePath: string): string {
  const ext = extname(statePath);
  return join(dirname(statePath), `${basename(statePath, ext)}-deadletter`);
}

interface Segment {
  name: string;
  bytes: number;
  entries: number;
}

export class FileDeadLetterStore implements DeadLetterStore {
  readonly location: string;
  readonly #bounds: DeadLetterBounds;
  readonly #clock: Clock;
  /** Entry counts of segments by name, valid while the size is unchanged (another process rewrote it otherwise). */
  readonly #counted = new Map<string, { bytes: number; entries: number }>();
  /** One change at a time from this process (two lanes may dead-letter at once). */
  readonly #mutex = new Mutex();
  #usage: DeadLetterUsage | undefined;
  /**
   * This process has not appended yet: its first append opens a new segment, so a line torn by an
   * earlier crash stays alone at the end of its segment (skipped on read) and never swallows a record.
   */
  #fresh = true;

  constructor(directory: string, bounds: DeadLetterBounds, clock: Clock) {
    this.location = directory;
    this.#bounds = bounds;
    this.#clock = clock;
  }

  usage(): DeadLetterUsage | undefined {
    return this.#usage;
  }

  append(records: readonly DeadLetterRecord[], signal: AbortSignal): Promise<AppendOutcome> {
    return this.#locked(signal, async () => {
      const segments = await this.#segments();
      const text = encodeRecords(records);
      const bytes = Buffer.byteLength(text, "utf8");
      let active = segments.at(-1);
      if (!active || this.#fresh || this.#full(active, bytes, records.length)) {
        this.#fresh = false;
        const seq = active ? Number(SEGMENT.exec(active.name)?.[1] ?? "0") + 1 : 1;
        active = { name: `${String(seq).padStart(16, "0")}.jsonl`, bytes: 0, entries: 0 };
        segments.push(active);
      }
      await appendDurably(join(this.location, active.name), text);
      active.bytes += bytes;
      active.entries += records.length;
      this.#counted.set(active.name, { bytes: active.bytes, entries: active.entries });
      const evicted = await this.#evict(segments);
      return { evicted, usage: this.#tally(segments) };
    });
  }

  refresh(signal: AbortSignal): Promise<DeadLetterUsage> {
    return this.#mutex.run(async () => {
      signal.throwIfAborted();
      return this.#tally(await this.#segments());
    });
  }

  list(signal: AbortSignal): Promise<DeadLetterRecord[]> {
    return this.#mutex.run(async () => {
      signal.throwIfAborted();
      const out: DeadLetterRecord[] = [];
      const segments = await this.#segments();
      for (const s of segments) out.push(...(await this.#read(s.name)));
      this.#tally(segments);
      return out;
    });
  }

  rewrite(
    remove: ReadonlySet<string>,
    update: ReadonlyMap<string, DeadLetterRecord>,
    signal: AbortSignal,
  ): Promise<number> {
    return this.#locked(signal, async () => {
      let removed = 0;
      const segments = await this.#segments();
      const kept: Segment[] = [];
      for (const s of segments) {
        const { kept: next, removed: gone, changed } = applyChanges(await this.#read(s.name), remove, update);
        removed += gone;
        if (!changed) {
          kept.push(s);
          continue;
        }
        const path = join(this.location, s.name);
        if (next.length === 0) {
          await unlink(path).catch(ignoreMissing);
          this.#counted.delete(s.name);
          continue;
        }
        const text = encodeRecords(next);
        await writeFileAtomic(nodeStateFs, path, Buffer.from(text, "utf8"));
        const updated = { name: s.name, bytes: Buffer.byteLength(text, "utf8"), entries: next.length };
        this.#counted.set(s.name, { bytes: updated.bytes, entries: updated.entries });
        kept.push(updated);
      }
      this.#tally(kept);
      return removed;
    });
  }

  close(): Promise<void> {
    return Promise.resolve();
  }

  #locked<T>(signal: AbortSignal, fn: () => Promise<T>): Promise<T> {
    return this.#mutex.run(async () => {
      signal.throwIfAborted();
      await mkdir(this.location, { recursive: true });
      return withDirectoryLock(join(this.location, LOCK), this.#clock, signal, fn);
    });
  }

  #full(active: Segment, bytes: number, entries: number): boolean {
    if (active.entries === 0) return false;
    const segmentBytes = Math.max(1, Math.floor(this.#bounds.maxBytes / SEGMENTS_PER_BOUND));
    if (active.bytes + bytes > segmentBytes) return true;
    const max = this.#bounds.maxEntries;
    if (max <= 0) return false;
    return active.entries + entries > Math.max(1, Math.floor(max / SEGMENTS_PER_BOUND));
  }

  /** Whole segments, oldest first, until the rest fits; the newest (just written) always stays. */
  async #evict(segments: Segment[]): Promise<number> {
    let evicted = 0;
    const over = (): boolean => {
      const { bytes, entries } = usageOf(segments);
      return (
        bytes > this.#bounds.maxBytes || (this.#bounds.maxEntries > 0 && entries > this.#bounds.maxEntries)
      );
    };
    while (segments.length > 1 && over()) {
      const oldest = segments.shift()!;
      await unlink(join(this.location, oldest.name)).catch(ignoreMissing);
      this.#counted.delete(oldest.name);
      evicted += oldest.entries;
    }
    return evicted;
  }

  /** The segments on disk, oldest first, with sizes and entry counts (re-counted when a size moved). */
  async #segments(): Promise<Segment[]> {
    let names: string[];
    try {
      names = (await readdir(this.location)).filter((n) => SEGMENT.test(n)).sort();
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return [];
      throw err;
    }
    const out: Segment[] = [];
    for (const name of names) {
      let bytes: number;
      try {
        bytes = (await stat(join(this.location, name))).size;
      } catch (err) {
        if (errnoCode(err) === "ENOENT") continue;
        throw err;
      }
      const known = this.#counted.get(name);
      const entries = known?.bytes === bytes ? known.entries : (await this.#read(name)).length;
      this.#counted.set(name, { bytes, entries });
      out.push({ name, bytes, entries });
    }
    return out;
  }

  async #read(name: string): Promise<DeadLetterRecord[]> {
    try {
      return decodeRecords(await readFile(join(this.location, name), "utf8")).records;
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return [];
      throw err;
    }
  }

  #tally(segments: readonly Segment[]): DeadLetterUsage {
    this.#usage = usageOf(segments);
    return this.#usage;
  }
}

/** One write and an fsync: the letters are on disk before the checkpoint moves past them. */
async function appendDurably(path: string, text: string): Promise<void> {
  const handle = await open(path, "a", 0o600);
  try {
    await handle.writeFile(text);
    await handle.datasync();
  } finally {
    await handle.close();
  }
}

function ignoreMissing(err: unknown): void {
  if (errnoCode(err) !== "ENOENT") throw err;
}

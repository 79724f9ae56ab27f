// The drops of one push, grouped by reason and detail (the dead-letter store keeps `detail` per
// group), told to the listener the moment they happen and returned whole at the end.
import type { LogEntry } from "../../model.ts";
import type { DropListener, DroppedEntries } from "../sink.ts";

export interface Drop {
  readonly entry: LogEntry;
  readonly reason: string;
  readonly detail: string;
}

export class PushDrops {
  readonly #groups = new Map<string, { reason: string; detail: string; entries: LogEntry[] }>();
  readonly #listener: DropListener | undefined;
  readonly #entries = new Set<LogEntry>();

  constructor(listener: DropListener | undefined) {
    this.#listener = listener;
  }

  /** Records drops decided together and tells the listener at once, one group per reason+detail. */
  add(drops: readonly Drop[]): void {
    if (drops.length === 0) return;
    const now = new Map<string, DroppedEntries & { entries: LogEntry[] }>();
    for (const { entry, reason, detail } of drops) {
      this.#entries.add(entry);
      const key = `${reason}\u0000${detail}`;
      let group = this.#groups.get(key);
      if (!group) {
        group = { reason, detail, entries: [] };
        this.#groups.set(key, group);
      }
      group.entries.push(entry);
      let told = now.get(key);
      if (!told) {
        told = { reason, detail, entries: [] };
        now.set(key, told);
      }
      told.entries.push(entry);
    }
    if (this.#listener) for (const group of now.values()) this.#listener(group);
  }

  /** Whether `entry` was dropped in this push. */
  has(entry: LogEntry): boolean {
    return this.#entries.has(entry);
  }

  get size(): number {
    let n = 0;
    for (const g of this.#groups.values()) n += g.entries.length;
    return n;
  }

  result(): DroppedEntries[] {
    return [...this.#groups.values()].map(({ reason, detail, entries }) => ({ reason, detail, entries }));
  }
}

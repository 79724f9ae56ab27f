// One EventLogFile row to one entry (spec A §7.8), compiled per file from its header: column
// positions, the sorted line layout and the label and metadata columns are worked out once, so a
// row costs its cells' escaping and one object for its metadata. A row that a transform must see,
// or one wider than the header, takes the general path through a row map.
import type { Transforms } from "../../egress/transforms.ts";
import { LogEntry, type CheckpointToken, type Labels } from "../../model.ts";
import { detached, rowObject, type CsvRow } from "../../salesforce/eventlogfile/csv-rows.ts";
import type { EventLogFileTypeSettings } from "./settings.ts";
import type { EntryShaper } from "../shaping/entry.ts";
import { canonicalJson, jsonString, jsonStringBody, rowRenderer } from "../shaping/json.ts";
import { deriveLevelBy } from "../shaping/level.ts";
import { routeFields } from "../shaping/metadata.ts";
import { timestampOf } from "../shaping/timestamp.ts";
import { TimestampMemo } from "../shaping/timestamp-memo.ts";

export interface ElfShapeOptions {
  type: EventLogFileTypeSettings;
  /** The structured-metadata fields in force for the type. */
  fields: readonly string[];
  timestampColumn: string;
  transforms: Transforms;
  shaper: EntryShaper;
}

export class ElfFileShaper {
  readonly #header: readonly string[];
  readonly #opts: ElfShapeOptions;
  readonly #index = new Map<string, number>();
  readonly #labels: Labels;
  /**
   * Cell positions in sorted-key order, and what goes before each cell's escaped text: `{"A": "` for
   * the first, `", "B": "` for the rest. A row's line is one join of those and its cells: its string
   * garbage is most of what the drain's GC collects.
   */
  readonly #order: number[];
  /** Prefix, cell, prefix, cell, ..., `"}`: the cells' slots are refilled for every row. */
  readonly #parts: string[];
  readonly #fields: [string, number][];
  readonly #promoted: [string, number][];
  readonly #tsA: number | undefined;
  readonly #tsB: number | undefined;
  readonly #requestId: number | undefined;
  readonly #tsMemoA = new TimestampMemo();
  readonly #tsMemoB = new TimestampMemo();
  readonly #fast: boolean;
  readonly #render: (row: CsvRow) => string;
  #cells: readonly string[] = [];
  readonly #get = (field: string): unknown => {
    const i = this.#index.get(field);
    return i === undefined ? undefined : (this.#cells[i] ?? "");
  };

  constructor(header: readonly string[], opts: ElfShapeOptions) {
    this.#header = header;
    this.#opts = opts;
    header.forEach((name, i) => this.#index.set(name, i));
    this.#labels = { source: "eventlogfile", event_type: opts.type.name };
    this.#order = [...this.#index.entries()]
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, i]) => i);
    this.#parts =
      this.#order.length === 0
        ? ["{}"]
        : [
            ...this.#order.flatMap((i, n) => [`${n === 0 ? "{" : '", '}${jsonString(header[i]!)}: "`, ""]),
            '"}',
          ];
    this.#fields = this.#positions(opts.fields);
    this.#promoted = this.#positions(opts.type.labels);
    this.#tsA = this.#index.get(opts.timestampColumn);
    this.#tsB = this.#index.get("TIMESTAMP");
    this.#requestId = this.#index.get("REQUEST_ID");
    // Duplicate column names make the row map (last one wins) the only faithful reading.
    this.#fast = opts.transforms.empty && this.#index.size === header.length;
    this.#render = rowRenderer([...header, "_extra"]);
  }

  #positions(names: readonly string[]): [string, number][] {
    return names.flatMap((n) => {
      const i = this.#index.get(n);
      return i === undefined ? [] : [[n, i] as [string, number]];
    });
  }

  /** The row's entry, or undefined when a transform dropped it or sampling left it out. */
  entry(
    cells: readonly string[],
    fallbackNs: bigint | undefined,
    checkpoint: CheckpointToken,
  ): LogEntry | undefined {
    if (!this.#fast || cells.length > this.#header.length)
      return this.#general(cells, fallbackNs, checkpoint);
    const { type, shaper } = this.#opts;
    if (type.sample < 1) {
      const id = this.#requestId === undefined ? "" : (cells[this.#requestId] ?? "");
      const key = id || canonicalJson(rowObject(this.#header, cells));
      if (!shaper.keep(key, type.sample, type.name)) return undefined;
    }
    this.#cells = cells;
    // Joined, not concatenated: one flat string of the line's exact size, no intermediate strings.
    const order = this.#order;
    const parts = this.#parts;
    for (let n = 0; n < order.length; n++) parts[2 * n + 1] = jsonStringBody(cells[order[n]!] ?? "");
    const line = parts.join("");
    const metadata: Labels = {};
    for (const [name, i] of this.#fields) metadata[name] = detached(cells[i] ?? "");
    metadata.level = deriveLevelBy(this.#get);
    return new LogEntry({
      timestampNs:
        (this.#tsA === undefined ? undefined : this.#tsMemoA.parse(cells[this.#tsA])) ??
        (this.#tsB === undefined ? undefined : this.#tsMemoB.parse(cells[this.#tsB])) ??
        shaper.fallbackNs(fallbackNs),
      labels: this.#promoted.length === 0 ? this.#labels : this.#promote((i) => cells[i]),
      line,
      asciiLine: true,
      structuredMetadata: metadata,
      checkpoint,
    });
  }

  #general(
    cells: readonly string[],
    fallbackNs: bigint | undefined,
    checkpoint: CheckpointToken,
  ): LogEntry | undefined {
    const { type, shaper, transforms, timestampColumn } = this.#opts;
    const row = rowObject(this.#header, cells);
    if (!transforms.empty && !transforms.apply(row)) return undefined;
    if (type.sample < 1 && !shaper.keep(row.REQUEST_ID || canonicalJson(row), type.sample, type.name)) {
      return undefined;
    }
    const metadata = routeFields(row, this.#opts.fields);
    for (const name in metadata) metadata[name] = detached(metadata[name]!);
    return new LogEntry({
      timestampNs:
        timestampOf(row[timestampColumn]) ?? timestampOf(row.TIMESTAMP) ?? shaper.fallbackNs(fallbackNs),
      labels: this.#promoted.length === 0 ? this.#labels : this.#promote((_, name) => row[name]),
      line: this.#render(row),
      structuredMetadata: metadata,
      checkpoint,
    });
  }

  /** Promoted columns first, then the reserved `source` and `event_type`, which win. */
  #promote(value: (index: number, name: string) => unknown): Labels {
    const labels: Labels = {};
    for (const [name, i] of this.#promoted) {
      const v = value(i, name);
      if (typeof v === "string" && v !== "") labels[name] = detached(v);
    }
    return Object.assign(labels, this.#labels);
  }
}

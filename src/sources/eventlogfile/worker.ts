// One EventType's work in one cycle (spec A §7.5-7.7): list every page, skip what is done, gate on
// the settle window, stream each file's rows into entries. The order of operations is load-bearing:
// every row but a file's last carries the pre-file cursor, the last one the advanced cursor, and a
// file that fails transiently ends the type without advancing, so nothing after it can move the
// watermark past it.
import type { Counter } from "@opentelemetry/api";
import type { Transforms } from "../../egress/transforms.ts";
import type { CheckpointToken, LogEntry } from "../../model.ts";
import type { Logger } from "../../obs/logger.ts";
import type { EventLogFileClient } from "../../salesforce/eventlogfile/client.ts";
import type { ListedFile, ListingAfter } from "../../salesforce/eventlogfile/listing.ts";
import { isThrottled } from "../../salesforce/rest-errors.ts";
import { formatIsoSeconds, nsToMs } from "../../salesforce/soql-datetime.ts";
import type { Clock } from "../../util/clock.ts";
import {
  alreadyProcessed,
  foldProcessed,
  parseElfCheckpoint,
  processedIndex,
  serialiseElfCheckpoint,
  type ElfCursor,
} from "./checkpoint.ts";
import { ElfFileShaper, type ElfShapeOptions } from "./shape.ts";
import { settleWindowMs, type EventLogFileSettings, type EventLogFileTypeSettings } from "./settings.ts";
import { loadCheckpoint, type CycleHealth } from "../shaping/cycle.ts";
import type { EntryShaper } from "../shaping/entry.ts";
import type { CheckpointReader } from "../source.ts";

export interface ElfRunContext {
  client: EventLogFileClient;
  settings: EventLogFileSettings;
  shaper: EntryShaper;
  transforms: Transforms;
  health: CycleHealth;
  log: Logger;
  clock: Clock;
  state: CheckpointReader;
  /** In-memory cursors of this run, by checkpoint key: what has been handed to the pipeline. */
  cursors: Map<string, ElfCursor>;
  globalFields: readonly string[];
  rowsIngested: Counter;
}

export interface ElfCycleContext {
  /** Local now plus the server's clock skew when it exceeds 30 s. */
  nowSfMs: number;
  signal: AbortSignal;
  /** Hands a batch on; a promise when the consumer is behind (wait for it before the next call). */
  emit: (entries: LogEntry[]) => Promise<void> | undefined;
}

type FileOutcome = "done" | "abandoned" | "empty" | "failed" | "throttled";

export async function processEventType(
  run: ElfRunContext,
  cycle: ElfCycleContext,
  type: EventLogFileTypeSettings,
): Promise<{ throttled: boolean }> {
  return new TypeWork(run, cycle, type).run();
}

class TypeWork {
  readonly #run: ElfRunContext;
  readonly #cycle: ElfCycleContext;
  readonly #type: EventLogFileTypeSettings;
  readonly #key: string;
  readonly #shapeOptions: ElfShapeOptions;
  readonly #sinceDefault: string;
  #lastYielded: string | undefined;

  constructor(run: ElfRunContext, cycle: ElfCycleContext, type: EventLogFileTypeSettings) {
    this.#run = run;
    this.#cycle = cycle;
    this.#type = type;
    this.#key = `eventlogfile:${type.name}`;
    this.#shapeOptions = {
      type,
      fields: type.structured_metadata_fields ?? run.globalFields,
      timestampColumn: run.settings.timestamp_column,
      transforms: run.transforms,
      shaper: run.shaper,
    };
    this.#sinceDefault = formatIsoSeconds(cycle.nowSfMs - run.settings.lookback);
  }

  async run(): Promise<{ throttled: boolean }> {
    const { cursors, log, clock } = this.#run;
    let loaded = cursors.get(this.#key);
    if (loaded === undefined) {
      const stored = await loadCheckpoint(this.#run.state, this.#key, {
        clock,
        log,
        signal: this.#cycle.signal,
      });
      loaded = parseElfCheckpoint(stored, log, this.#key);
      cursors.set(this.#key, loaded);
    }
    const { current, outcome } = await this.#drain(loaded);
    cursors.set(this.#key, current);
    if (current !== loaded) {
      const final = serialiseElfCheckpoint(current, this.#sinceDefault);
      if (final !== this.#lastYielded)
        await this.#emit([this.#run.shaper.checkpointOnly(this.#token(final))]);
    }
    if (outcome !== "failed" && outcome !== "throttled") this.#run.health.succeeded(this.#type.name);
    return { throttled: outcome === "throttled" };
  }

  /** Lists and processes pages until a short page, a settle gate or a failure. */
  async #drain(start: ElfCursor): Promise<{ current: ElfCursor; outcome: FileOutcome | "ok" }> {
    const { client, settings, health } = this.#run;
    const { signal, nowSfMs } = this.#cycle;
    const settle = settleWindowMs(settings);
    let current = start;
    let after: ListingAfter | undefined;
    for (;;) {
      let page;
      try {
        page = await client.list(
          {
            eventType: this.#type.name,
            interval: settings.interval,
            since: current.lastCreated ?? this.#sinceDefault,
            after,
            pageSize: settings.page_size,
          },
          signal,
        );
      } catch (err) {
        if (signal.aborted) throw err;
        health.failed(this.#type.name, err, `EventLogFile listing for ${this.#type.name}`);
        return { current, outcome: isThrottled(err) ? "throttled" : "failed" };
      }
      if (page.skipped > 0) {
        this.#run.log.warn(
          { eventType: this.#type.name, rows: page.skipped },
          "listed EventLogFile rows without an Id or CreatedDate were skipped",
        );
      }
      let index = processedIndex(current);
      for (const file of page.files) {
        if (alreadyProcessed(index, file.id, file.createdDate)) continue;
        const ageMs = file.createdNs === undefined ? undefined : nowSfMs - nsToMs(file.createdNs);
        // Later files are newer still, so the first unsettled file ends the type for this cycle.
        if (settle > 0 && ageMs !== undefined && ageMs < settle) return { current, outcome: "ok" };
        const advanced = foldProcessed(current, file.id, file.createdDate, this.#run.log, this.#key);
        const outcome = await this.#file(file, current, advanced, ageMs);
        if (outcome === "done" || outcome === "abandoned") {
          current = advanced;
          index = processedIndex(current);
        } else if (outcome !== "empty") return { current, outcome };
      }
      const last = page.files.at(-1);
      if (page.listed < settings.page_size || last === undefined) return { current, outcome: "ok" };
      after = { createdDate: last.createdDate, id: last.id };
    }
  }

  async #file(
    file: ListedFile,
    pre: ElfCursor,
    adv: ElfCursor,
    ageMs: number | undefined,
  ): Promise<FileOutcome> {
    const { client, settings, health, log } = this.#run;
    const { signal } = this.#cycle;
    const preToken = this.#token(serialiseElfCheckpoint(pre, this.#sinceDefault));
    const advToken = this.#token(serialiseElfCheckpoint(adv, this.#sinceDefault));
    let held: LogEntry | undefined;
    let rows = 0;
    let emitted = 0;
    const finish = async (): Promise<void> => {
      if (!held) return;
      held.checkpoint = advToken;
      this.#lastYielded = advToken.value;
      emitted++;
      await this.#emit([held]);
      held = undefined;
    };
    let opened;
    try {
      try {
        opened = await client.open(file, signal);
        let shape: ElfFileShaper | undefined;
        for await (const batch of opened.rows) {
          shape ??= new ElfFileShaper(batch.header, this.#shapeOptions);
          // One entry is held back: only the file's last row may carry the advanced cursor.
          const out: LogEntry[] = [];
          for (const cells of batch.rows) {
            rows++;
            const entry = shape.entry(cells, file.createdNs, preToken);
            if (!entry) continue;
            if (held) out.push(held);
            held = entry;
          }
          if (out.length > 0) {
            emitted += out.length;
            await this.#emit(out);
          }
        }
      } catch (err) {
        if (signal.aborted) throw err;
        if (isThrottled(err)) {
          health.failed(this.#type.name, err, `EventLogFile download ${file.id}`);
          return "throttled";
        }
        if (ageMs !== undefined && ageMs > settings.download_max_age) {
          log.warn(
            {
              eventType: this.#type.name,
              fileId: file.id,
              createdDate: file.createdDate,
              rowsShipped: emitted,
              err: String(err),
            },
            "abandoning an EventLogFile that keeps failing and is older than download_max_age",
          );
          await finish();
          return "abandoned";
        }
        health.failed(this.#type.name, err, `EventLogFile ${file.id} after ${rows} rows`);
        return "failed";
      } finally {
        opened?.close();
      }
      if (rows === 0) return "empty";
      await finish();
      return "done";
    } finally {
      if (emitted > 0) this.#run.rowsIngested.add(emitted, { event_type: this.#type.name });
    }
  }

  #token(value: string): CheckpointToken {
    return { key: this.#key, value };
  }

  async #emit(entries: LogEntry[]): Promise<void> {
    const wait = this.#cycle.emit(entries);
    if (wait) await wait;
  }
}

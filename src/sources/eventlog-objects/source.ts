// EventLogObjectsSource (`eventlog_objects`, bulk lane; spec A §6): polls SOQL-queryable objects on
// a timestamp watermark, each on its own jittered timer. Ascending objects page through a (ts, Id)
// cursor (#38); Big Objects are drained newest-first (#46, #95). A per-object settle window keeps
// the cursor behind rows that are not queryable yet (#87). Every record carries its own cursor, so a
// crash resumes after exactly the last pushed record.
import type { LogEntry } from "../../model.ts";
import { isThrottled, SalesforceApiError } from "../../salesforce/rest-errors.ts";
import type { SObjectRecord } from "../../salesforce/rest.ts";
import { formatIsoMs } from "../../salesforce/soql-datetime.ts";
import { msToNs } from "../../model.ts";
import { IdWindowCursor } from "./cursor.ts";
import { drainDescending } from "./drain.ts";
import { PAGE, ascendingQuery } from "./query.ts";
import {
  objectSettleWindowMs,
  type EventLogObjectSettings,
  type EventLogObjectsSettings,
} from "./settings.ts";
import { aborted, jittered, loadCheckpoint, pause } from "../shaping/cycle.ts";
import { pollingKit, type PollingKit, type PollingSourceDeps } from "../shaping/deps.ts";
import { canonicalJson } from "../shaping/json.ts";
import type { CheckpointReader, Source } from "../source.ts";

export interface EventLogObjectsSourceOptions extends PollingSourceDeps {
  settings: EventLogObjectsSettings;
}

/** What one object's cycle ended with. */
interface CycleEnd {
  throttled: boolean;
}

export class EventLogObjectsSource implements Source {
  readonly name = "eventlog_objects" as const;
  readonly #settings: EventLogObjectsSettings;
  readonly #warnedLargeBoundary = new Set<string>();
  readonly #k: PollingKit;

  constructor(opts: EventLogObjectsSourceOptions) {
    this.#settings = opts.settings;
    this.#k = pollingKit(opts, "eventlog_objects", opts.settings.transforms);
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const objects = this.#settings.objects;
    const due = new Map(objects.map((o) => [o.name, this.#k.clock.monotonic()]));
    const cursors = new Map<string, IdWindowCursor>();
    while (!signal.aborted) {
      for (const obj of objects) {
        if (aborted(signal)) return;
        if (due.get(obj.name)! > this.#k.clock.monotonic()) continue;
        const end = yield* this.#cycle(obj, state, cursors, signal);
        due.set(obj.name, this.#k.clock.monotonic() + jittered(this.#k.clock, obj.poll_interval));
        if (end.throttled) {
          // The org's API budget is spent: every other object that is due waits a full interval too.
          for (const other of objects) {
            if (other !== obj && due.get(other.name)! <= this.#k.clock.monotonic()) {
              due.set(other.name, this.#k.clock.monotonic() + jittered(this.#k.clock, other.poll_interval));
            }
          }
          break;
        }
      }
      if (this.#k.once || objects.length === 0) return;
      const next = Math.min(...due.values()) - this.#k.clock.monotonic();
      if (!(await pause(this.#k.clock, Math.max(0, next), signal))) return;
    }
  }

  async *#cycle(
    obj: EventLogObjectSettings,
    state: CheckpointReader,
    cursors: Map<string, IdWindowCursor>,
    signal: AbortSignal,
  ): AsyncGenerator<LogEntry, CycleEnd> {
    const key = `eventlog_objects:${obj.name}`;
    let cursor = cursors.get(key);
    if (cursor === undefined) {
      let stored: string | undefined;
      try {
        stored = await loadCheckpoint(state, key, { clock: this.#k.clock, log: this.#k.log, signal });
      } catch {
        return { throttled: false }; // only an abort ends the load's retries
      }
      cursor = IdWindowCursor.load(key, stored, {
        nowMs: this.#k.clock.now(),
        lookbackMs: obj.lookback,
        log: this.#k.log,
      });
      cursors.set(key, cursor);
    }
    const settle = objectSettleWindowMs(obj);
    const bound = settle > 0 ? formatIsoMs(msToNs(this.#k.clock.now() - settle)) : undefined;
    const before = cursor.serialise();
    let lastYielded: LogEntry | undefined;
    try {
      const records = obj.big_object
        ? this.#descending(obj, cursor, bound, signal)
        : this.#ascending(obj, cursor, bound, signal);
      for await (const record of records) {
        const entry = this.#consume(obj, cursor, record);
        if (entry) {
          lastYielded = entry;
          yield entry;
        }
      }
      this.#k.health.succeeded(obj.name);
    } catch (err) {
      if (signal.aborted) return { throttled: false };
      if (err instanceof SalesforceApiError && err.sfErrorCode === "BIG_OBJECT_UNSUPPORTED_OPERATION") {
        this.#k.log.warn(
          { object: obj.name },
          "this object looks like a Big Object: set big_object: true for it",
        );
      }
      this.#k.health.failed(obj.name, err, `polling ${obj.name}`);
      if (isThrottled(err)) return { throttled: true };
    } finally {
      cursor.compact();
    }
    if (cursor.boundaryIsLarge && !this.#warnedLargeBoundary.has(obj.name)) {
      this.#warnedLargeBoundary.add(obj.name);
      this.#k.log.warn(
        { object: obj.name },
        "more than 5000 records share one timestamp; the checkpoint grows with them",
      );
    }
    // Filtered or sampled rows moved the cursor but no entry carries it: persist it anyway (#64).
    const after = cursor.serialise();
    if (after !== before && lastYielded?.checkpoint.value !== after) {
      yield this.#k.shaper.checkpointOnly(cursor.token());
    }
    return { throttled: false };
  }

  /** Ascending pages until a short one ("drain until short page"). */
  async *#ascending(
    obj: EventLogObjectSettings,
    cursor: IdWindowCursor,
    bound: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<SObjectRecord> {
    for (;;) {
      if (signal.aborted) return;
      const soql = ascendingQuery(obj.name, obj.timestamp_field, cursor.watermark, cursor.lastId, bound);
      const page = await this.#k.rest.queryAll(soql, {
        signal,
        where: `${obj.name} polling`,
        pythonNumbers: true,
      });
      const fresh = page.filter((r) => !cursor.has(r.Id));
      if (fresh.length === 0 && page.length >= PAGE) {
        this.#k.health.stalled(obj.name, cursor.watermark, "a full page of records already shipped");
        return;
      }
      if (fresh.length > 0) this.#k.health.progressed(obj.name);
      yield* fresh;
      if (page.length < PAGE) return;
    }
  }

  async *#descending(
    obj: EventLogObjectSettings,
    cursor: IdWindowCursor,
    bound: string | undefined,
    signal: AbortSignal,
  ): AsyncGenerator<SObjectRecord> {
    const result = await drainDescending({
      rest: this.#k.rest,
      object: obj.name,
      tsField: obj.timestamp_field,
      watermark: cursor.watermark,
      boundLiteral: bound,
      maxRecords: obj.max_catchup_records,
      signal,
    });
    if (result.stalledAt !== undefined) {
      this.#k.health.stalled(obj.name, result.stalledAt, "a full page brought nothing new");
    }
    const fresh = result.records.filter((r) => !cursor.has(r.Id));
    if (fresh.length > 0) this.#k.health.progressed(obj.name);
    yield* fresh;
  }

  /** Cursor first (from the untransformed record), then transforms, sampling and shaping. */
  #consume(obj: EventLogObjectSettings, cursor: IdWindowCursor, record: SObjectRecord): LogEntry | undefined {
    const id = record.Id;
    cursor.advance(record[obj.timestamp_field], id);
    const checkpoint = cursor.token();
    if (!this.#k.transforms.empty && !this.#k.transforms.apply(record)) return undefined;
    if (obj.sample < 1) {
      const sampleKey = typeof id === "string" && id !== "" ? id : canonicalJson(record);
      if (!this.#k.shaper.keep(sampleKey, obj.sample, obj.name)) return undefined;
    }
    return this.#k.shaper.entry({
      payload: record,
      labels: { source: "eventlog_objects", event_type: obj.name },
      metadataFields: this.#k.globalFields,
      timestampFields: [obj.timestamp_field, "EventDate", "CreatedDate"],
      fallbackNs: cursor.watermarkNs,
      checkpoint,
    });
  }
}

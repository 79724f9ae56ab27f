// ApexLogSource (`apexlog`, bulk lane, opt-in; spec A §8): lists debug logs on a (StartTime, Id)
// cursor and ships each body as one line. A body that fails transiently is not skipped: while the
// log is younger than download_max_age the cycle ends before it, so the next cycle lists it again
// (#93); only an older log falls back to its metadata line.
import type { Counter } from "@opentelemetry/api";
import type { Labels, LogEntry } from "../../model.ts";
import { APEXLOG_PAGE, ApexLogClient, apexLogMetadata } from "../../salesforce/apexlog.ts";
import { isThrottled } from "../../salesforce/rest-errors.ts";
import type { SObjectRecord } from "../../salesforce/rest.ts";
import { nsToMs, parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";
import { pyStr } from "../../egress/transforms-python.ts";
import type { ApexLogSettings } from "./settings.ts";
import { IdWindowCursor } from "../eventlog-objects/cursor.ts";
import { aborted, jittered, loadCheckpoint, pause } from "../shaping/cycle.ts";
import { pollingKit, type PollingKit, type PollingSourceDeps } from "../shaping/deps.ts";
import { canonicalJson } from "../shaping/json.ts";
import type { CheckpointReader, Source } from "../source.ts";

const KEY = "apexlog";
const LABELS: Labels = { source: "apexlog", event_type: "apexlog" };

export interface ApexLogSourceOptions extends PollingSourceDeps {
  settings: ApexLogSettings;
}

/** What to do with one listed log. */
type Outcome = { kind: "entry"; entry: LogEntry } | { kind: "skip" } | { kind: "stop" };

export class ApexLogSource implements Source {
  readonly name = "apexlog" as const;
  readonly #settings: ApexLogSettings;
  readonly #client: ApexLogClient;
  readonly #ingested: Counter;
  readonly #skipped: Counter;
  readonly #k: PollingKit;

  constructor(opts: ApexLogSourceOptions) {
    this.#settings = opts.settings;
    this.#k = pollingKit(opts, "apexlog", opts.settings.transforms);
    this.#client = new ApexLogClient({ rest: this.#k.rest, meter: this.#k.meter });
    this.#ingested = this.#k.meter.createCounter("sf2loki_apexlog_logs_ingested", {
      description: "ApexLogs shipped",
    });
    this.#skipped = this.#k.meter.createCounter("sf2loki_apexlog_bodies_skipped", {
      description: "ApexLogs shipped as metadata only",
    });
  }

  async *events(state: CheckpointReader, signal: AbortSignal): AsyncGenerator<LogEntry> {
    let stored: string | undefined;
    try {
      stored = await loadCheckpoint(state, KEY, { clock: this.#k.clock, log: this.#k.log, signal });
    } catch {
      return; // only an abort ends the load's retries
    }
    const cursor = IdWindowCursor.load(KEY, stored, {
      nowMs: this.#k.clock.now(),
      lookbackMs: this.#settings.lookback,
      log: this.#k.log,
    });
    while (!signal.aborted) {
      yield* this.#cycle(cursor, signal);
      if (this.#k.once) return;
      if (!(await pause(this.#k.clock, jittered(this.#k.clock, this.#settings.poll_interval), signal)))
        return;
    }
  }

  async *#cycle(cursor: IdWindowCursor, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const before = cursor.serialise();
    let lastYielded: LogEntry | undefined;
    try {
      for (;;) {
        if (signal.aborted) return;
        let page: SObjectRecord[];
        try {
          page = await this.#client.list(cursor.watermark, cursor.lastId, this.#settings.users, signal);
        } catch (err) {
          if (!aborted(signal)) this.#k.health.failed("apexlog", err, "ApexLog listing");
          return;
        }
        const fresh = page.filter((r) => typeof r.Id === "string" && r.Id !== "" && !cursor.has(r.Id));
        if (fresh.length === 0 && page.length >= APEXLOG_PAGE) {
          this.#k.health.stalled("apexlog", cursor.watermark, "a full page of logs already shipped");
          break;
        }
        if (fresh.length > 0) this.#k.health.progressed("apexlog");
        for (const record of fresh) {
          const outcome = await this.#handle(record, cursor, signal);
          if (outcome.kind === "stop") return;
          if (outcome.kind === "entry") {
            lastYielded = outcome.entry;
            yield outcome.entry;
            this.#ingested.add(1);
            this.#k.health.succeeded("apexlog");
          }
        }
        if (page.length < APEXLOG_PAGE) break;
      }
    } finally {
      cursor.compact();
    }
    // Filtered or sampled logs moved the cursor but no entry carries it (#64).
    const after = cursor.serialise();
    if (after !== before && lastYielded?.checkpoint.value !== after)
      yield this.#k.shaper.checkpointOnly(cursor.token());
  }

  /** The cursor advances only past a log that is shipped, filtered, sampled out or given up on. */
  async #handle(record: SObjectRecord, cursor: IdWindowCursor, signal: AbortSignal): Promise<Outcome> {
    const id = record.Id as string;
    const metadata = apexLogMetadata(record);
    const advance = (): void => {
      cursor.advance(record.StartTime, id);
    };
    if (!this.#k.transforms.empty && !this.#k.transforms.apply(metadata)) {
      advance();
      return { kind: "skip" };
    }
    if (this.#settings.sample < 1 && !this.#k.shaper.keep(id, this.#settings.sample, "apexlog")) {
      advance();
      return { kind: "skip" };
    }
    const length = typeof metadata.LogLength === "number" ? metadata.LogLength : 0;
    let body: string | undefined;
    let skipReason: "size" | "download_error" | undefined;
    if (length > this.#settings.max_body_bytes) skipReason = "size";
    else {
      try {
        body = await this.#client.body(id, this.#settings.max_body_bytes, signal);
        if (body === undefined) skipReason = "size";
      } catch (err) {
        if (signal.aborted) return { kind: "stop" };
        if (isThrottled(err)) {
          this.#k.health.failed("apexlog", err, `ApexLog body ${id} (throttled)`);
          return { kind: "stop" };
        }
        const start = typeof record.StartTime === "string" ? parseSfTimestampNs(record.StartTime) : undefined;
        const ageMs = start === undefined ? Infinity : this.#k.clock.now() - nsToMs(start);
        if (ageMs <= this.#settings.download_max_age) {
          // Not yielded and not advanced past: the next cycle lists this log again (#93).
          this.#k.health.failed("apexlog", err, `ApexLog body ${id}`);
          return { kind: "stop" };
        }
        this.#k.log.warn(
          { id, err: String(err) },
          "shipping an old ApexLog's metadata without its body: the download keeps failing",
        );
        skipReason = "download_error";
      }
    }
    advance();
    return { kind: "entry", entry: this.#entry(metadata, cursor, body, skipReason) };
  }

  #entry(
    metadata: Record<string, unknown>,
    cursor: IdWindowCursor,
    body: string | undefined,
    skipReason: "size" | "download_error" | undefined,
  ): LogEntry {
    const extra: Labels = {};
    for (const [k, v] of Object.entries(metadata))
      if (v !== null && v !== undefined && v !== "") extra[k] = pyStr(v);
    if (skipReason !== undefined) {
      extra.body_skipped = "true";
      extra.body_skip_reason = skipReason;
      this.#skipped.add(1, { reason: skipReason });
    }
    return this.#k.shaper.entry({
      payload: metadata,
      labels: LABELS,
      metadataFields: this.#k.globalFields,
      timestampFields: ["StartTime"],
      fallbackNs: cursor.watermarkNs,
      checkpoint: cursor.token(),
      line: body ?? canonicalJson(metadata),
      extraMetadata: extra,
    });
  }
}

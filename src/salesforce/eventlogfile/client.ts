// The EventLogFile client: discovery, listing and streamed CSV downloads through the REST client,
// with the ELF metrics and the clock-skew probe (from this client's own download responses only).
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import type { Clock } from "../../util/clock.ts";
import type { RestClient } from "../rest.ts";
import type { RestDownload } from "../rest-download.ts";
import { SalesforceApiError, SalesforceTransportError } from "../rest-errors.ts";
import { csvRowBatches, type CsvBatch } from "./csv-rows.ts";
import {
  discoveryQuery,
  listedFileOf,
  listingQuery,
  type ElfInterval,
  type ListedFile,
  type ListingAfter,
} from "./listing.ts";

export interface OpenedFile {
  /** Rows in batches as they arrive; errors are SalesforceApiError (transport, HTTP) or EventLogFileCsvError. */
  rows: AsyncGenerator<CsvBatch>;
  /** Body bytes received so far. */
  readonly bytes: number;
  /** Releases the connection; for a caller that never iterates `rows` (idempotent). */
  close(): void;
}

export class EventLogFileClient {
  readonly #rest: RestClient;
  readonly #clock: Clock;
  readonly #downloadErrors: Counter;
  readonly #downloadBytes: Counter;
  readonly #filesProcessed: Counter;
  /** server `Date` minus local now, from the newest download response; undefined until one arrived. */
  skewMs: number | undefined;

  constructor(opts: { rest: RestClient; clock: Clock; meter?: Meter }) {
    this.#rest = opts.rest;
    this.#clock = opts.clock;
    const meter = opts.meter ?? metrics.getMeter("sf2loki");
    this.#downloadErrors = meter.createCounter("sf2loki_eventlogfile_download_errors", {
      description: "EventLogFile listing and download failures",
    });
    // At 0 from start-up for the reasons known in advance (an HTTP status appears when it happens).
    for (const reason of ["listing", "transport", "csv"]) this.#downloadErrors.add(0, { reason });
    this.#downloadBytes = meter.createCounter("sf2loki_eventlogfile_download_bytes", {
      description: "EventLogFile body bytes downloaded",
    });
    this.#filesProcessed = meter.createCounter("sf2loki_eventlogfile_files_processed", {
      description: "EventLogFile files downloaded and parsed to the end",
    });
  }

  /** Distinct EventTypes that have files of this interval. */
  async discover(interval: ElfInterval, signal: AbortSignal): Promise<string[]> {
    const types = new Set<string>();
    for await (const r of this.#rest.query(discoveryQuery(interval), {
      signal,
      where: "EventLogFile type discovery",
      api: "eventlogfile",
    })) {
      if (typeof r.EventType === "string" && r.EventType !== "") types.add(r.EventType);
    }
    return [...types].sort();
  }

  /** One listing query (every page of it), in (CreatedDate, Id) order; rows without an Id are skipped. */
  async list(
    q: {
      eventType: string;
      interval: ElfInterval;
      since: string;
      after: ListingAfter | undefined;
      pageSize: number;
    },
    signal: AbortSignal,
  ): Promise<{ files: ListedFile[]; listed: number; skipped: number }> {
    const files: ListedFile[] = [];
    let listed = 0;
    try {
      for await (const r of this.#rest.query(
        listingQuery(q.eventType, q.interval, q.since, q.after, q.pageSize),
        {
          signal,
          where: `EventLogFile listing for ${q.eventType}`,
          api: "eventlogfile",
        },
      )) {
        listed++;
        const file = listedFileOf(r);
        if (file) files.push(file);
      }
    } catch (err) {
      if (!signal.aborted) this.#downloadErrors.add(1, { reason: "listing" });
      throw err;
    }
    return { files, listed, skipped: listed - files.length };
  }

  /** Starts the download and returns its rows as they are parsed; the caller drains or returns it. */
  async open(file: ListedFile, signal: AbortSignal): Promise<OpenedFile> {
    const where = `${file.id} (${file.eventType})`;
    let download: RestDownload;
    try {
      download = await this.#rest.download(this.#rest.path(`sobjects/EventLogFile/${file.id}/LogFile`), {
        signal,
        where: `EventLogFile download ${where}`,
        api: "eventlogfile",
      });
    } catch (err) {
      this.#countError(err, signal);
      throw err;
    }
    if (download.serverDateMs !== undefined) this.skewMs = download.serverDateMs - this.#clock.now();
    const countError = (err: unknown): void => {
      this.#countError(err, signal);
    };
    const downloadBytes = this.#downloadBytes;
    const filesProcessed = this.#filesProcessed;
    async function* rows(): AsyncGenerator<CsvBatch> {
      try {
        yield* csvRowBatches(download, where);
      } catch (err) {
        countError(err);
        throw err;
      } finally {
        downloadBytes.add(download.bytes, { event_type: file.eventType });
        download.close();
      }
      filesProcessed.add(1, { event_type: file.eventType });
    }
    return {
      rows: rows(),
      get bytes() {
        return download.bytes;
      },
      close: () => {
        download.close();
      },
    };
  }

  #countError(err: unknown, signal: AbortSignal): void {
    if (signal.aborted) return;
    if (err instanceof SalesforceTransportError) this.#downloadErrors.add(1, { reason: "transport" });
    else if (err instanceof SalesforceApiError && err.status !== undefined) {
      this.#downloadErrors.add(1, { reason: `HTTP ${err.status}` });
    } else this.#downloadErrors.add(1, { reason: "csv" });
  }
}

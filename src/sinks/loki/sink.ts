// The Loki sink: caps lines, encodes, pushes, and isolates poison entries by bisection (spec B §4.8).
import { metrics, type Meter } from "@opentelemetry/api";
import type { Dispatcher, Pool } from "undici";
import { ConfigError } from "../../errors.ts";
import type { Batch, LogEntry } from "../../model.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import { PermanentSinkError, type DroppedEntries, type PushResult, type Sink } from "../sink.ts";
import { authHeaders } from "./auth.ts";
import { guardStaticLabels, renderLabels } from "./labels.ts";
import { capLines } from "./line-cap.ts";
import { createLokiSinkMetrics, type LokiSinkMetrics } from "./metrics.ts";
import { encodeRequest } from "./request.ts";
import { LokiRejectedError, LokiService, createLokiPool, type LokiDeadlines } from "./service.ts";
import { wireFormatOf, type LokiSinkSettings, type WireFormat } from "./settings.ts";

export interface LokiSinkDeps {
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** An injected dispatcher is the caller's to close; otherwise the sink owns a keep-alive Pool. */
  dispatcher?: Dispatcher;
  /** Push deadlines (tests shorten them); default LOKI_DEADLINES. */
  deadlines?: LokiDeadlines;
}

/** Parses the push URL; userinfo is refused so credentials never ride in a logged URL (upstream #125). */
function parsePushUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(
      `sink.loki.url is not a valid URL; set the full push URL, e.g. https://host/loki/api/v1/push.`,
    );
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(`sink.loki.url must be http(s), got ${url.protocol}; set the full Loki push URL.`);
  }
  if (url.username !== "" || url.password !== "") {
    throw new ConfigError(
      "sink.loki.url carries credentials; move them to sink.loki.tenant_id and sink.loki.auth_token(_file).",
    );
  }
  return url;
}

const CLOSE_BUDGET_MS = 5_000;

function rejectionReason(status: number): string {
  return status === 413 ? "oversized_413" : "bad_request";
}

export class LokiSink implements Sink {
  readonly #format: WireFormat;
  readonly #maxLineBytes: number;
  readonly #service: LokiService;
  readonly #metrics: LokiSinkMetrics;
  readonly #logger: Logger;
  readonly #ownedPool: Pool | undefined;
  readonly #clock: Clock;

  constructor(settings: LokiSinkSettings, deps: LokiSinkDeps = {}) {
    guardStaticLabels(settings.labels);
    const url = parsePushUrl(settings.url);
    const headers = authHeaders(settings);
    this.#logger = (deps.logger ?? silentLogger).child({ component: "loki-sink" });
    this.#format = wireFormatOf(settings);
    if (settings.encoding === "json" && settings.compression === "snappy") {
      // snappy is the key's default (for protobuf), so failing here would break configs that ran
      // under the Python sf2loki; say once what actually happens instead.
      this.#logger.warn(
        "sink.loki.compression snappy does not apply to encoding json; sending uncompressed JSON " +
          "(set compression: gzip or none to silence this)",
      );
    }
    this.#maxLineBytes = settings.batch.max_line_bytes;
    this.#clock = deps.clock ?? systemClock;
    this.#metrics = createLokiSinkMetrics(deps.meter ?? metrics.getMeter("sf2loki"));
    this.#ownedPool = deps.dispatcher ? undefined : createLokiPool(url.origin, deps.deadlines);
    this.#service = new LokiService({
      url,
      where: `${url.origin}${url.pathname}`,
      authHeaders: headers,
      dispatcher: deps.dispatcher ?? this.#ownedPool!,
      clock: this.#clock,
      logger: this.#logger,
      bytesPushed: this.#metrics.bytesPushed,
      ...(deps.deadlines ? { deadlines: deps.deadlines } : {}),
    });
  }

  async push(batch: Batch, signal?: AbortSignal): Promise<PushResult> {
    const entries = batch.filter((e) => !e.checkpointOnly);
    const dropped = new Map<string, LogEntry[]>();
    if (entries.length > 0) await this.#pushPart(entries, true, dropped, signal);
    const result: DroppedEntries[] = [];
    for (const [reason, list] of dropped) result.push({ reason, entries: list });
    return { dropped: result };
  }

  /**
   * Pushes `entries`; on 400/413 splits at floor(n/2) until the poison entries stand alone. A lone
   * poison entry is dropped into `dropped`, or thrown as Permanent when it was the whole batch.
   * A retryable failure anywhere propagates at once: the pipeline retries the original batch.
   */
  async #pushPart(
    entries: LogEntry[],
    top: boolean,
    dropped: Map<string, LogEntry[]>,
    signal: AbortSignal | undefined,
  ): Promise<void> {
    capLines(entries, this.#maxLineBytes, (e) => {
      this.#metrics.linesTruncated.add(1, { source: e.labels.source ?? "unknown" });
    });
    const request = await encodeRequest(entries, this.#format);
    try {
      await this.#service.send(request, signal);
      return;
    } catch (err) {
      if (!(err instanceof LokiRejectedError)) throw err;
      const reason = rejectionReason(err.status);
      if (entries.length > 1) {
        this.#logger.debug(
          { entries: entries.length, status: err.status },
          "Loki refused a batch, bisecting",
        );
        const mid = Math.floor(entries.length / 2);
        await this.#pushPart(entries.slice(0, mid), false, dropped, signal);
        await this.#pushPart(entries.slice(mid), false, dropped, signal);
        return;
      }
      const entry = entries[0]!;
      const message =
        `Loki refused an entry of stream ${renderLabels(entry.labels)} at ${entry.timestampNs}ns with ` +
        `HTTP ${err.status} (${err.detail}); it is dropped`;
      if (top) throw new PermanentSinkError(message, reason, { cause: err });
      this.#logger.warn({ reason, status: err.status }, message);
      const list = dropped.get(reason);
      if (list) list.push(entry);
      else dropped.set(reason, [entry]);
    }
  }

  /** Lets in-flight requests finish for up to 5 s, then tears the connections down. */
  async close(): Promise<void> {
    const pool = this.#ownedPool;
    if (!pool || pool.closed) return;
    const timer = new AbortController();
    const closed = pool.close().then(() => true);
    const expired = this.#clock.sleep(CLOSE_BUDGET_MS, timer.signal).then(
      () => false,
      () => true,
    );
    const inTime = await Promise.race([closed, expired]);
    timer.abort();
    if (!inTime) await pool.destroy();
  }
}

export function createLokiSink(settings: LokiSinkSettings, deps?: LokiSinkDeps): LokiSink {
  return new LokiSink(settings, deps);
}

// What Loki already holds of some entries, asked through its query API (#27). Before a resumed run
// pushes what the previous run may have pushed too, the pipeline asks here; a copy found is not sent
// again, so no LogQL metric query counts it twice. One `query_range` per stream of the entries, on the
// exact stream selector and the entries' time range, with the push's tenant and credentials; a match
// is the same timestamp and the same line as pushed (after the line cap), which is also what Loki's
// log queries collapse copies on.
import { isClosed, type Dispatcher } from "../../util/http-dispatchers.ts";
import { originDispatcher } from "../../util/routed-dispatchers.ts";
import { unreachable } from "../../util/proxy-fault.ts";
import type { TlsOptions } from "../../util/tls-files.ts";
import { parseDuration } from "../../config/duration.ts";
import type { Labels, LogEntry } from "../../model.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import { StoredLookupError, type LookupHorizon, type StoredAnswer, type StoredLookup } from "../sink.ts";
import { truncateLine } from "../wire/line-cap.ts";
import { HorizonReader } from "./ingester-horizon.ts";
import { groupStreams, type StreamGroup } from "./streams.ts";
import type { PushDeadlines } from "../wire/push-service.ts";

/**
 * Entries per page. Loki serves up to `max_entries_limit_per_query` (5000), but a page travels from
 * its querier in one gRPC message capped at 4 MiB by default: 5000 EventLogFile-wide lines (~800 bytes)
 * broke that and Loki closed the connection mid-answer (found against Loki 3.4.6). 1000 lines of up to
 * ~4 KB stay under it.
 */
export const LOOKUP_PAGE = 1000;
const ERROR_TEXT_MAX = 300;
const PUSH_PATH = "/loki/api/v1/push";

/**
 * The query API's base for a push URL: the push path's prefix (`https://host/loki/api/v1/push` and
 * `https://gw/tenant-a/loki/api/v1/push` keep what precedes `/loki`), else the origin.
 */
export function queryBaseOf(pushUrl: string): string {
  const url = new URL(pushUrl);
  const path = url.pathname.endsWith(PUSH_PATH) ? url.pathname.slice(0, -PUSH_PATH.length) : "";
  return `${url.origin}${path}`;
}

export interface LokiLookupOptions {
  /** The query API's base (`sink.loki.reconcile.query_url`, default queryBaseOf(url)). */
  base: string;
  /** The push's tenant and credentials. */
  authHeaders: Readonly<Record<string, string>>;
  /** `batch.max_line_bytes`: a line is stored as the push capped it. */
  maxLineBytes: number;
  deadlines: PushDeadlines;
  /** The push's CA bundle and client certificate (`sink.loki.tls`): the query API is the same Loki. */
  tls?: TlsOptions | undefined;
  /** Injected (tests); otherwise the lookup owns connections opened on first use (direct or via the proxy). */
  dispatcher?: Dispatcher;
  /**
   * The query finding a stream's entries, and the labels Loki names that stream by. Default: the
   * pushed labels themselves. The OTLP sink's records carry other labels in Loki (otlp/mapping.ts).
   */
  queryOf?: (labels: Labels) => StreamQuery;
  /** `reconcile.ingesters_within`: `auto` (read Loki's /config, the default) or ms (0: no horizon). */
  ingestersWithin?: "auto" | number;
  /** `reconcile.flush_url`: the ingester's /flush, called before looking past the horizon; unset: never. */
  flushUrl?: string | undefined;
  clock?: Clock;
}

/** `sink.loki.reconcile` as a sink reads it: whether, where and how far back it looks up. */
export interface LookupSettings {
  enabled: boolean;
  query_url?: string | null | undefined;
  /** `auto` or a duration (parsed by the config). */
  ingesters_within?: string | undefined;
  flush_url?: string | null | undefined;
}

/** The lookup options `reconcile.ingesters_within` and `reconcile.flush_url` set. */
export function lookupHorizonOf(r: LookupSettings): Pick<LokiLookupOptions, "ingestersWithin" | "flushUrl"> {
  const within = r.ingesters_within ?? "auto";
  return {
    ingestersWithin: within === "auto" ? "auto" : (parseDuration(within) ?? "auto"),
    flushUrl: r.flush_url ?? undefined,
  };
}

/** A LogQL log query for one stream's entries, and the stream labels its answers must carry. */
export interface StreamQuery {
  readonly selector: string;
  readonly labelSet: Labels;
}

interface QueryData {
  result?: {
    stream?: Record<string, string>;
    values?: [string, string, ...unknown[]][];
  }[];
}

export class LokiLookup implements StoredLookup {
  readonly #opts: LokiLookupOptions;
  readonly #base: URL;
  readonly #horizon: HorizonReader;
  #pool: Dispatcher | undefined;
  /** The flush URL's own connections, when it is not the query API's origin. */
  #flushPool: Dispatcher | undefined;
  readonly flush: ((signal: AbortSignal) => Promise<void>) | undefined;

  constructor(opts: LokiLookupOptions) {
    this.#opts = opts;
    this.#base = new URL(opts.base);
    const flushUrl = opts.flushUrl === undefined || opts.flushUrl === "" ? undefined : new URL(opts.flushUrl);
    this.#horizon = new HorizonReader({
      setting: opts.ingestersWithin ?? "auto",
      base: this.#base,
      authHeaders: opts.authHeaders,
      responseMs: opts.deadlines.responseMs,
      flushUrl,
      clock: opts.clock ?? systemClock,
      dispatcherFor: (origin) =>
        origin === this.#base.origin ? this.#dispatcher() : this.#flushDispatcher(origin),
    });
    this.flush = flushUrl === undefined ? undefined : (signal) => this.#horizon.flush(signal);
  }

  horizon(signal: AbortSignal): Promise<LookupHorizon> {
    return this.#horizon.horizon(signal);
  }

  async stored(entries: readonly LogEntry[], signal: AbortSignal): Promise<StoredAnswer> {
    const stored = new Set<LogEntry>();
    let queries = 0;
    const count = (): number => ++queries;
    try {
      for (const group of groupStreams(entries)) await this.#lookStream(group, stored, signal, count);
    } catch (err) {
      if (err instanceof StoredLookupError) throw err;
      if (signal.aborted) throw err;
      const { text } = unreachable(err, this.#base);
      throw this.#failure("unreachable", `transport error: ${text}`, queries, err);
    }
    return { stored, queries };
  }

  async close(): Promise<void> {
    const pools = [this.#pool, this.#flushPool];
    this.#pool = this.#flushPool = undefined;
    for (const pool of pools) if (pool && !isClosed(pool)) await pool.destroy();
  }

  /** Adds the entries of one stream that Loki holds to `stored`. */
  async #lookStream(
    group: StreamGroup,
    stored: Set<LogEntry>,
    signal: AbortSignal,
    count: () => number,
  ): Promise<void> {
    const wanted = new Map<string, LogEntry[]>();
    let min = group.entries[0]!.timestampNs;
    let max = min;
    for (const e of group.entries) {
      if (e.timestampNs < min) min = e.timestampNs;
      if (e.timestampNs > max) max = e.timestampNs;
      const key = `${e.timestampNs}\u0000${this.#pushedLine(e)}`;
      const same = wanted.get(key);
      if (same) same.push(e);
      else wanted.set(key, [e]);
    }
    // Loki may answer a page short of the limit with more to come (a query split across its store
    // and its ingesters), so a short page ends the lookup only once it reached the range's end, every
    // entry asked for was found, or it brought nothing not seen before.
    const seen = new Set<string>();
    let found = 0;
    let from = min;
    const { selector, labelSet } = this.#opts.queryOf?.(group.labelSet) ?? {
      selector: group.labels,
      labelSet: group.labelSet,
    };
    for (;;) {
      const data = await this.#query(selector, from, max + 1n, signal, count());
      let fresh = 0;
      let last = from;
      for (const stream of data.result ?? []) {
        const ours = sameStream(labelSet, stream.stream ?? {});
        for (const value of stream.values ?? []) {
          const ts = BigInt(value[0]);
          if (ts > last) last = ts;
          const key = `${value[0]}\u0000${value[1]}`;
          if (!ours || seen.has(key)) continue;
          seen.add(key);
          fresh++;
          if (wanted.has(key)) found++;
          for (const e of wanted.get(key) ?? []) stored.add(e);
        }
      }
      if (fresh === 0 || found === wanted.size || (last >= max && fresh < LOOKUP_PAGE)) return;
      if (last === from && fresh >= LOOKUP_PAGE) {
        throw this.#failure("unreadable", `more than ${LOOKUP_PAGE} entries of ${selector} at ${from}ns`, 0);
      }
      from = last;
    }
  }

  #pushedLine(e: LogEntry): string {
    const max = this.#opts.maxLineBytes;
    return max > 0 && e.lineBytes > max ? truncateLine(e.line, e.lineBytes, max) : e.line;
  }

  async #query(
    selector: string,
    startNs: bigint,
    endNs: bigint,
    signal: AbortSignal,
    made: number,
  ): Promise<QueryData> {
    const params = new URLSearchParams({
      query: selector,
      start: String(startNs),
      end: String(endNs),
      limit: String(LOOKUP_PAGE),
      direction: "forward",
    });
    const { responseMs } = this.#opts.deadlines;
    const res = await this.#dispatcher().request({
      origin: this.#base.origin,
      path: `${this.#base.pathname.replace(/\/$/, "")}/loki/api/v1/query_range?${params.toString()}`,
      method: "GET",
      headers: {
        ...this.#opts.authHeaders,
        // Stream labels apart from structured metadata, so a stream is recognised by its labels alone.
        "x-loki-response-encoding-flags": "categorize-labels",
        "user-agent": "sf2loki",
      },
      headersTimeout: responseMs,
      bodyTimeout: responseMs,
      signal,
    });
    const text = await res.body.text();
    if (res.statusCode === 200) {
      try {
        return (JSON.parse(text) as { data?: QueryData }).data ?? {};
      } catch (err) {
        throw this.#failure("unreadable", `an answer that is not Loki's JSON`, made, err);
      }
    }
    const said = text.replace(/\s+/g, " ").trim().slice(0, ERROR_TEXT_MAX);
    const reason = res.statusCode === 429 || res.statusCode >= 500 ? "unavailable" : "refused";
    throw this.#failure(reason, `HTTP ${res.statusCode} (${said})`, made);
  }

  #dispatcher(): Dispatcher {
    if (this.#opts.dispatcher) return this.#opts.dispatcher;
    this.#pool ??= originDispatcher(this.#base.origin, {
      connectMs: this.#opts.deadlines.connectMs,
      keepAliveMs: 30_000,
      tls: this.#opts.tls,
    });
    return this.#pool;
  }

  #flushDispatcher(origin: string): Dispatcher {
    this.#flushPool ??= originDispatcher(origin, {
      connectMs: this.#opts.deadlines.connectMs,
      keepAliveMs: 30_000,
      tls: this.#opts.tls,
    });
    return this.#flushPool;
  }

  #failure(reason: string, what: string, queries: number, cause?: unknown): StoredLookupError {
    const where = `${this.#base.origin}${this.#base.pathname.replace(/\/$/, "")}/loki/api/v1/query_range`;
    return new StoredLookupError(
      `Loki's query API at ${where} did not answer a lookup: ${what}`,
      reason,
      queries,
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * Loki names a stored stream by the labels pushed plus any it adds itself (`service_name`, which it
 * derives when none was sent): every label we pushed must be there with its value.
 */
function sameStream(
  pushed: Readonly<Record<string, string>>,
  stored: Readonly<Record<string, string>>,
): boolean {
  for (const k in pushed) if (stored[k] !== pushed[k]) return false;
  return true;
}

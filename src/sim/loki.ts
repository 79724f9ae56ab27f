// A simulated Loki on loopback: the push endpoint with both encodings, Loki-like validation, an
// in-memory record of what it accepted, and faults on demand. Used by tests, `sf2loki demo`/`sim`
// and the benchmarks.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { setTimeout as delay } from "node:timers/promises";
import { BodyDecodeError, decodePushBody } from "./loki-decode.ts";
import { LokiFaults } from "./loki-faults.ts";
import { defaultIngestLimits, ingest } from "./loki-ingest.ts";
import { queryRange } from "./loki-query.ts";
import { TenantRateLimiter, type IngestionRateLimit } from "./loki-rate-limit.ts";
import {
  AcceptedStore,
  type AcceptedEntry,
  type LabelMap,
  type RetainMode,
  type StreamSummary,
} from "./loki-store.ts";

export type { AcceptedEntry, LabelMap, StreamSummary };
export { LokiFaults };

export const PUSH_PATH = "/loki/api/v1/push";
export const QUERY_RANGE_PATH = "/loki/api/v1/query_range";

export interface LokiReceiverOptions {
  host?: string;
  port?: number;
  /** Decompressed push body limit (Loki's max receive message size); above it → 413. */
  maxBodyBytes?: number;
  /** Loki's `max_line_size`; a longer line → 400 naming the entry. */
  maxLineBytes?: number;
  /** Per-stream out-of-order window; off by default, like current Loki. */
  outOfOrderWindowMs?: number;
  /**
   * Loki's `querier.query_ingesters_within` in ms: an entry not flushed yet (POST /flush flushes all)
   * dated further back than this answers no query. Default 0: every entry answers (#35).
   */
  ingestersWithinMs?: number;
  /**
   * Loki's `reject_old_samples_max_age` in ms (Loki: 168h). Off by default here, because tests push
   * fixed instants; `sf2loki demo` turns on Loki's defaults.
   */
  rejectOldSamplesMaxAgeMs?: number;
  /** Loki's `creation_grace_period` in ms (Loki: 10m); off by default like the age check. */
  creationGracePeriodMs?: number;
  /** Loki's label limits (defaults 15, 1024, 2048). */
  maxLabelNamesPerSeries?: number;
  maxLabelNameLength?: number;
  maxLabelValueLength?: number;
  /** Loki's structured metadata limits (defaults 64 KiB, 128); 0 disables. */
  maxStructuredMetadataBytes?: number;
  maxStructuredMetadataEntries?: number;
  /** Entries an out-of-order report lists (Loki's `-ingester.max-ignored-stream-errors`, 10). */
  maxIgnoredStreamErrors?: number;
  /** A tenant's ingestion limit (Loki's `ingestion_rate_mb`, `ingestion_burst_size_mb`); off by default. */
  ingestionRate?: IngestionRateLimit;
  /** The rate limiter's clock, ms; performance.now by default (tests inject theirs). */
  rateNowMs?: () => number;
  /** Loki's clock for the age checks, ms since the epoch; Date.now by default. */
  now?: () => number;
  /** Waits used for latency injection; real timers by default (benchmarks want real latency). */
  sleep?: (ms: number) => Promise<void>;
  /** How many request records `requests` keeps (oldest dropped). */
  keepRequests?: number;
  /** `counts` keeps no entries (benchmarks); `all` (default) keeps everything for queries. */
  retain?: RetainMode;
}

export interface PushRecord {
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The tenant the request was pushed as (see tenantOf). */
  readonly tenant: string;
  readonly bodyBytes: number;
  /** Streams in the request once decoded (0 when it was answered before decoding). */
  readonly streams: number;
  readonly status: number;
  readonly accepted: number;
  readonly rejected: number;
}

export interface ReceiverCounts {
  requests: number;
  connections: number;
  /** Entries accepted, duplicates included. */
  accepted: number;
  /** Distinct stream + timestamp + line. */
  unique: number;
  duplicates: number;
  /** Entries refused by validation or poison rules (forced failures refuse requests, not entries). */
  rejected: number;
  /** Requests answered with a forced failure. */
  forcedFailures: number;
  /** Requests refused whole for the tenant's ingestion rate (429). */
  rateLimited: number;
}

export interface LokiReceiver {
  /** `http://127.0.0.1:<port>` */
  readonly url: string;
  /** `<url>/loki/api/v1/push` */
  readonly pushUrl: string;
  readonly faults: LokiFaults;
  readonly counts: ReceiverCounts;
  /** Recent push requests, oldest first. */
  readonly requests: readonly PushRecord[];
  /** Log queries answered (`query_range`), faulted ones included. */
  queries: number;
  /** POST /flush calls answered. */
  flushes: number;
  entries(matcher?: LabelMap): AcceptedEntry[];
  lines(matcher?: LabelMap): string[];
  countBy(key: (line: string, entry: AcceptedEntry) => string, matcher?: LabelMap): Map<string, number>;
  streams(): StreamSummary[];
  /** Forgets accepted data, counts, records and faults (connections stay open). */
  reset(): void;
  stop(): Promise<void>;
}

/**
 * The tenant a push is for, as Loki's auth gateway sees it: X-Scope-OrgID, else the user of a Basic
 * Authorization (Grafana Cloud's instance id); "fake" when neither is sent (Loki without auth).
 */
export function tenantOf(headers: IncomingMessage["headers"]): string {
  const scope = headers["x-scope-orgid"];
  if (typeof scope === "string" && scope !== "") return scope;
  const auth = headers.authorization ?? "";
  if (!auth.startsWith("Basic ")) return "fake";
  const decoded = Buffer.from(auth.slice(6), "base64").toString("utf8");
  const user = decoded.slice(0, decoded.indexOf(":") < 0 ? undefined : decoded.indexOf(":"));
  return user === "" ? "fake" : user;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  return Buffer.concat(chunks);
}

function send(
  res: ServerResponse,
  status: number,
  body = "",
  headers: Record<string, string> = {},
  contentType = "text/plain; charset=utf-8",
): void {
  if (res.destroyed) return;
  res.writeHead(status, body === "" ? headers : { "content-type": contentType, ...headers });
  res.end(body);
}

export async function startLokiReceiver(opts: LokiReceiverOptions = {}): Promise<LokiReceiver> {
  const maxBodyBytes = opts.maxBodyBytes ?? 64 * 1024 * 1024;
  const maxLineBytes = opts.maxLineBytes ?? defaultIngestLimits(0).maxLineBytes;
  const sleep = opts.sleep ?? ((ms: number) => delay(ms));
  const keepRequests = opts.keepRequests ?? 1000;
  const store = new AcceptedStore(opts.retain, { trackNewest: opts.outOfOrderWindowMs !== undefined });
  const faults = new LokiFaults();
  const requests: PushRecord[] = [];
  const ingestersWithinMs = opts.ingestersWithinMs ?? 0;
  /** What a querier does not ask the ingesters for: now - query_ingesters_within; undefined: none. */
  const ingesterEdge = (): bigint | undefined =>
    ingestersWithinMs === 0
      ? undefined
      : BigInt(Math.floor((opts.now ?? Date.now)() - ingestersWithinMs)) * 1_000_000n;
  const counts = { requests: 0, connections: 0, rejected: 0, forcedFailures: 0, rateLimited: 0 };

  const record = (r: PushRecord): void => {
    requests.push(r);
    if (requests.length > keepRequests) requests.shift();
  };

  const rateLimiter = opts.ingestionRate
    ? new TenantRateLimiter(opts.ingestionRate, opts.rateNowMs ?? (() => performance.now()))
    : undefined;

  async function handlePush(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readBody(req);
    counts.requests++;
    await faults.waitWhileStalled();
    const tenant = tenantOf(req.headers);
    const base = { headers: { ...req.headers }, tenant, bodyBytes: body.length, streams: 0 };
    const forced = faults.takeForcedFailure();
    if (forced) {
      counts.forcedFailures++;
      record({ ...base, status: forced.status, accepted: 0, rejected: 0 });
      const headers: Record<string, string> =
        forced.retryAfter === undefined ? {} : { "retry-after": forced.retryAfter };
      send(res, forced.status, forced.body ?? `injected failure ${forced.status}`, headers);
      return;
    }
    let result;
    try {
      const streams = decodePushBody(
        body,
        req.headers["content-type"],
        req.headers["content-encoding"],
        maxBodyBytes,
      );
      const limited = rateLimiter?.refusal(tenant, streams);
      if (limited !== undefined) {
        counts.rateLimited++;
        record({ ...base, streams: streams.length, status: 429, accepted: 0, rejected: 0 });
        send(res, 429, `${limited}\n`);
        return;
      }
      const loki = defaultIngestLimits((opts.now ?? Date.now)(), tenant);
      result = ingest(streams, store, {
        ...loki,
        maxLineBytes,
        outOfOrderWindowMs: opts.outOfOrderWindowMs,
        poison: faults.poison,
        rejectOldSamplesMaxAgeMs: opts.rejectOldSamplesMaxAgeMs,
        creationGracePeriodMs: opts.creationGracePeriodMs,
        maxLabelNamesPerSeries: opts.maxLabelNamesPerSeries ?? loki.maxLabelNamesPerSeries,
        maxLabelNameLength: opts.maxLabelNameLength ?? loki.maxLabelNameLength,
        maxLabelValueLength: opts.maxLabelValueLength ?? loki.maxLabelValueLength,
        maxStructuredMetadataBytes: opts.maxStructuredMetadataBytes ?? loki.maxStructuredMetadataBytes,
        maxStructuredMetadataEntries: opts.maxStructuredMetadataEntries ?? loki.maxStructuredMetadataEntries,
        maxIgnoredStreamErrors: opts.maxIgnoredStreamErrors ?? loki.maxIgnoredStreamErrors,
      });
    } catch (err) {
      if (!(err instanceof BodyDecodeError)) throw err;
      record({ ...base, status: err.status, accepted: 0, rejected: 0 });
      send(res, err.status, err.message);
      return;
    }
    counts.rejected += result.rejected;
    record({
      ...base,
      streams: result.streams,
      status: result.status,
      accepted: result.accepted,
      rejected: result.rejected,
    });
    // Loki's push handler answers with http.Error: the message plus a newline.
    send(res, result.status, result.status === 204 ? "" : `${result.body}\n`);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (faults.latencyMs > 0) await sleep(faults.latencyMs);
    const path = (req.url ?? "/").split("?")[0];
    if (path === PUSH_PATH && req.method === "POST") {
      await handlePush(req, res);
      return;
    }
    req.resume();
    if (path === QUERY_RANGE_PATH && req.method === "GET") {
      receiver.queries++;
      const forced = faults.takeQueryFailure();
      const answer =
        forced === undefined
          ? queryRange(
              store,
              tenantOf(req.headers),
              new URL(req.url ?? "/", url).searchParams,
              ingesterEdge(),
            )
          : { status: forced, body: `simulated query failure ${forced}\n` };
      if (answer.status === 200) send(res, 200, answer.body, {}, "application/json");
      else send(res, answer.status, answer.body);
    } else if (path === "/ready" && req.method === "GET") {
      send(res, 200, "ready\n");
    } else if (path === "/config" && req.method === "GET") {
      send(res, 200, `querier:\n  query_ingesters_within: ${ingestersWithinMs / 1000}s\n`, {}, "text/plain");
    } else if (path === "/flush" && req.method === "POST") {
      store.flush();
      receiver.flushes++;
      send(res, 204, "");
    } else if (path === "/metrics" && req.method === "GET") {
      send(res, 200, "loki_ingester_flush_queue_length 0\n");
    } else if (path === "/sim/loki/stats" && req.method === "GET") {
      const stats = { ...receiver.counts, streams: store.streams().length, held: faults.held };
      send(res, 200, JSON.stringify(stats), {}, "application/json");
    } else {
      send(res, 404, "not found\n");
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      send(res, 500, `receiver error: ${err instanceof Error ? err.message : String(err)}`);
    });
  });
  server.on("connection", () => {
    counts.connections++;
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(opts.port ?? 0, opts.host ?? "127.0.0.1", () => {
      server.off("error", reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${opts.host ?? "127.0.0.1"}:${port}`;

  const receiver: LokiReceiver = {
    url,
    pushUrl: url + PUSH_PATH,
    faults,
    get counts(): ReceiverCounts {
      return {
        ...counts,
        accepted: store.accepted,
        unique: store.unique,
        duplicates: store.duplicates,
      };
    },
    requests,
    queries: 0,
    flushes: 0,
    entries: (matcher) => store.entries(matcher),
    lines: (matcher) => store.lines(matcher),
    countBy: (key, matcher) => store.countBy(key, matcher),
    streams: () => store.streams(),
    reset() {
      receiver.queries = 0;
      receiver.flushes = 0;
      store.clear();
      faults.clear();
      requests.length = 0;
      Object.assign(counts, { requests: 0, rejected: 0, forcedFailures: 0, rateLimited: 0 });
    },
    async stop() {
      faults.clear();
      const closed = new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
      server.closeAllConnections();
      await closed;
    },
  };
  return receiver;
}

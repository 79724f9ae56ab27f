// The Salesforce REST client: SOQL and Tooling queries as record streams, JSON GETs (limits,
// describe) and streamed blob downloads. One token re-mint on 401, bounded retries on transport
// errors, 429 and 5xx, typed errors for everything else (rest-errors.ts).
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import type { Dispatcher } from "../util/http-dispatchers.ts";
import { salesforceDispatcher, type RestDeadlines } from "./connections.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { fullJitter, retry, type RetryPolicy } from "../util/retry.ts";
import type { AccessToken, AccessTokenSource } from "./access-token.ts";
import { RestDownload } from "./rest-download.ts";
import { SalesforceSessionError, SalesforceTransportError, isTransient } from "./rest-errors.ts";
import { parsePythonJson } from "./rest-json.ts";
import { errorForStatus, jsonObjectOf, queryPageOf } from "./rest-response.ts";

export interface RestClientOptions {
  tokens: AccessTokenSource;
  /** `60.0`: the `v60.0` path segment. */
  apiVersion: string;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** Shared connections (the org's, with its TokenProvider); by default the client owns its own. */
  dispatcher?: Dispatcher;
  /** true: close() closes an injected `dispatcher` too (the org's, closed with its REST client). */
  closesDispatcher?: boolean;
  /** Deadlines of the owned pool (tests shorten them); default SALESFORCE_REST_DEADLINES. */
  deadlines?: RestDeadlines;
  /** Attempts for transport errors, 429 and 5xx: 3, about 0.5 s then 1.5 s (spec §8, fix #93). */
  retryPolicy?: RetryPolicy;
}

export interface CallOptions {
  signal?: AbortSignal | undefined;
  /** What the call is for, in operator messages: `EventLogFile listing for API`. */
  where?: string;
  /** The `api` attribute of `salesforce_api_throttled`. */
  api?: "soql" | "eventlogfile" | "apexlog_body" | "limits" | "describe" | "user_lookup";
  /** false: one attempt only, for a caller whose own retry loop also covers reading the body. */
  retry?: boolean;
}

export interface QueryOptions extends CallOptions {
  /** Tooling API (`ApexLog`, `TraceFlag`). */
  tooling?: boolean;
  /** Records whose values become Loki lines: numbers keep Python's types (rest-json.ts). */
  pythonNumbers?: boolean;
}

export type SObjectRecord = Record<string, unknown>;

export { SALESFORCE_REST_DEADLINES, type RestDeadlines } from "./connections.ts";

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, backoffMs: fullJitter(500, 3_000) };
const ERROR_BODY_MAX = 64 * 1024;

/** The `api` values a throttled call is counted under, known in advance: exported at 0 from start-up. */
const THROTTLE_APIS = ["soql", "eventlogfile", "limits", "apexlog_body", "user_lookup"];

export class RestClient {
  readonly apiVersion: string;
  readonly #tokens: AccessTokenSource;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #policy: RetryPolicy;
  readonly #throttled: Counter;

  constructor(opts: RestClientOptions) {
    this.apiVersion = opts.apiVersion;
    this.#tokens = opts.tokens;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "salesforce-rest" });
    this.#ownsDispatcher = opts.dispatcher === undefined || opts.closesDispatcher === true;
    this.#dispatcher = opts.dispatcher ?? salesforceDispatcher(undefined, opts.deadlines);
    this.#policy = opts.retryPolicy ?? DEFAULT_RETRY;
    this.#throttled = (opts.meter ?? metrics.getMeter("sf2loki")).createCounter(
      "sf2loki_salesforce_api_throttled",
      {
        description: "Salesforce calls refused with REQUEST_LIMIT_EXCEEDED",
      },
    );
    for (const api of THROTTLE_APIS) this.#throttled.add(0, { api });
  }

  /** `/services/data/v60.0/<rest>` */
  path(rest: string): string {
    return `/services/data/v${this.apiVersion}/${rest}`;
  }

  /** Every record of a query, page by page through `nextRecordsUrl`, as Salesforce returned them. */
  async *query(soql: string, opts: QueryOptions = {}): AsyncGenerator<SObjectRecord> {
    const where = opts.where ?? "a SOQL query";
    let path: string | undefined = this.path(
      `${opts.tooling ? "tooling/" : ""}query?q=${encodeURIComponent(soql)}`,
    );
    while (path !== undefined) {
      const { status, body } = await this.#getText(path, where, opts);
      const page = queryPageOf(where, status, body, opts.pythonNumbers ? parsePythonJson : undefined);
      yield* page.records;
      path = page.next;
    }
  }

  /** A whole (bounded, `LIMIT`ed) query result in memory. */
  async queryAll(soql: string, opts: QueryOptions = {}): Promise<SObjectRecord[]> {
    const out: SObjectRecord[] = [];
    for await (const record of this.query(soql, opts)) out.push(record);
    return out;
  }

  /** GET a JSON object: `limits`, `sobjects/`. */
  async getJson(path: string, opts: CallOptions = {}): Promise<Record<string, unknown>> {
    const where = opts.where ?? path;
    const { status, body } = await this.#getText(path, where, opts);
    return jsonObjectOf(where, status, body);
  }

  /** Opens a streamed blob; the caller iterates it and closes it on every exit path. */
  async download(path: string, opts: CallOptions = {}): Promise<RestDownload> {
    const where = opts.where ?? path;
    const res = await this.#call(path, where, opts);
    return new RestDownload({
      status: res.statusCode,
      headers: res.headers,
      body: res.body,
      where,
      signal: opts.signal,
    });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async #getText(path: string, where: string, opts: CallOptions): Promise<{ status: number; body: string }> {
    const once = async (): Promise<{ status: number; body: string }> => {
      const res = await this.#call(path, where, { ...opts, retry: false });
      try {
        return { status: res.statusCode, body: await res.body.text() };
      } catch (err) {
        throw this.#transport(where, err, opts.signal);
      }
    };
    return opts.retry === false ? once() : retry(once, this.retryOptions(where, opts.signal));
  }

  /** A 2xx response with its body unread; retried while transient, errors typed. */
  async #call(path: string, where: string, opts: CallOptions): Promise<Dispatcher.ResponseData> {
    const once = async (): Promise<Dispatcher.ResponseData> => {
      const res = await this.#authorized(path, where, opts.signal);
      if (res.statusCode >= 200 && res.statusCode < 300) return res;
      const body = await readCapped(res.body);
      const err = errorForStatus(where, res.statusCode, body);
      if (err.sfErrorCode === "REQUEST_LIMIT_EXCEEDED") this.#throttled.add(1, { api: opts.api ?? "soql" });
      throw err;
    };
    if (opts.retry === false) return once();
    return retry(once, this.retryOptions(where, opts.signal));
  }

  /** One request with the current token; on 401, invalidate, re-mint and try once more. */
  async #authorized(
    path: string,
    where: string,
    signal: AbortSignal | undefined,
  ): Promise<Dispatcher.ResponseData> {
    let token = await this.#tokens.token(signal);
    let res = await this.#send(token, path, where, signal);
    if (res.statusCode !== 401) return res;
    await readCapped(res.body);
    this.#tokens.invalidate(token.accessToken);
    token = await this.#tokens.token(signal);
    res = await this.#send(token, path, where, signal);
    if (res.statusCode !== 401) return res;
    await readCapped(res.body);
    throw new SalesforceSessionError(where);
  }

  async #send(
    token: AccessToken,
    path: string,
    where: string,
    signal: AbortSignal | undefined,
  ): Promise<Dispatcher.ResponseData> {
    try {
      // What undici's top-level request(url, { dispatcher }) does, without loading its index.
      const url = new URL(`${token.instanceUrl}${path}`);
      return await this.#dispatcher.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "GET",
        headers: { authorization: `Bearer ${token.accessToken}`, accept: "application/json" },
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      throw this.#transport(where, err, signal, token.instanceUrl);
    }
  }

  /** `target`: the instance reached, so a proxy that refused the connection is named as the proxy. */
  #transport(where: string, err: unknown, signal: AbortSignal | undefined, target?: string): unknown {
    if (signal?.aborted) return signal.reason;
    return err instanceof SalesforceTransportError ? err : new SalesforceTransportError(where, err, target);
  }

  /** The client's retry settings, for a caller that retries a whole exchange itself. */
  retryOptions(where: string, signal: AbortSignal | undefined): Parameters<typeof retry>[1] {
    return {
      policy: this.#policy,
      clock: this.#clock,
      isTransient,
      ...(signal ? { signal } : {}),
      onRetry: (err, attempt, delayMs) => {
        this.#log.debug(
          { where, attempt, delayMs: Math.round(delayMs), err: String(err) },
          "retrying Salesforce call",
        );
      },
    };
  }
}

/** An error body, capped so a huge HTML page cannot be buffered whole. */
async function readCapped(body: Dispatcher.ResponseData["body"]): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of body) {
      const buf = chunk as Buffer;
      chunks.push(buf);
      size += buf.length;
      if (size >= ERROR_BODY_MAX) break;
    }
  } catch {
    // a cut error body still yields whatever arrived
  } finally {
    body.destroy();
  }
  return Buffer.concat(chunks).toString("utf8");
}

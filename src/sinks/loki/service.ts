// One push request over HTTP with Loki's status classification and the internal retry loop
// (spec B §4.6–4.7). It knows nothing of batches: it sends a body and says what happened.
import { Pool, type Dispatcher } from "../../util/http-dispatchers.ts";
import type { Counter } from "@opentelemetry/api";
import { Sf2LokiError, describeError } from "../../errors.ts";
import type { Logger } from "../../obs/logger.ts";
import type { Clock } from "../../util/clock.ts";
import { retry } from "../../util/retry.ts";
import { RetryableSinkError } from "../sink.ts";
import { AuthFailureLog } from "./auth-failures.ts";
import { MAX_ATTEMPTS, lokiRetryPolicy, parseRetryAfter } from "./retry-policy.ts";
import type { EncodedRequest } from "./request.ts";
import { exchange, type Exchanged } from "./exchange.ts";
import { LokiRateLimitedError, parseRateLimited } from "./rate-limited.ts";

/**
 * Every push ends: a connection opens within `connectMs`; the response headers arrive within
 * `responseMs` of the request being sent, and the body never goes `responseMs` without a byte. A
 * connection that died silently therefore costs one `responseMs`, then the attempt is retried
 * (undici drops the timed-out socket, so the retry opens a fresh one).
 */
export interface LokiDeadlines {
  connectMs: number;
  responseMs: number;
}

export const LOKI_DEADLINES: Readonly<LokiDeadlines> = { connectMs: 10_000, responseMs: 30_000 };
const DETAIL_MAX_BYTES = 2048;
/**
 * A 400 names every refused entry (about 200 bytes each, grouped when identical): 1 MiB holds the
 * report of several thousand. A longer body is cut, and the entries it no longer names stay unsettled.
 */
const REJECTION_BODY_MAX_BYTES = 1_048_576;

/** Loki refused the payload itself (400/413): the caller isolates the poison entries. */
export class LokiRejectedError extends Sf2LokiError {
  readonly status: number;
  /** The body's start, whitespace collapsed, for messages. */
  readonly detail: string;
  /** The body as sent (up to 1 MiB), for reading Loki's per-entry refusals. */
  readonly body: string;
  constructor(status: number, body: string) {
    const detail = collapse(body.slice(0, DETAIL_MAX_BYTES));
    super("SF2LOKI_LOKI_REJECTED", `Loki rejected the payload with HTTP ${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
    this.body = body;
  }
}

function collapse(text: string): string {
  return text.replace(/\s+/g, " ").trim();
}

/** A failed attempt worth retrying inside this push (transport error, 429, 5xx). */
class TransientAttemptError extends Error {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, retryAfterMs?: number, options?: { cause?: unknown }) {
    super(message, options);
    this.retryAfterMs = retryAfterMs;
  }
}

/** A Pool with keep-alive for the push URL's origin and the spec's timeouts. */
export function createLokiPool(origin: string, deadlines: LokiDeadlines = LOKI_DEADLINES): Pool {
  return new Pool(origin, {
    connect: { timeout: deadlines.connectMs },
    headersTimeout: deadlines.responseMs,
    bodyTimeout: deadlines.responseMs,
    keepAliveTimeout: 30_000,
  });
}

/** What an answer's body is read for: a 400 names the refused entries, other failures say why. */
function bodyBytesKept(status: number): number {
  if (status >= 200 && status < 300) return 0;
  return status === 400 ? REJECTION_BODY_MAX_BYTES : DETAIL_MAX_BYTES;
}

export interface LokiServiceOptions {
  url: URL;
  /** Where, for operator messages: the URL without userinfo or query. */
  where: string;
  /** Where its settings are in the config (`sink.loki`), for the hint of a refused push. */
  configKey?: string;
  authHeaders: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  clock: Clock;
  logger: Logger;
  bytesPushed: Counter;
  /** Defaults LOKI_DEADLINES; also applied per request, so an injected dispatcher gets them too. */
  deadlines?: LokiDeadlines;
}

export class LokiService {
  readonly #opts: LokiServiceOptions;
  readonly #path: string;
  readonly #authLog: AuthFailureLog;
  readonly #responseMs: number;

  constructor(opts: LokiServiceOptions) {
    this.#opts = opts;
    this.#responseMs = (opts.deadlines ?? LOKI_DEADLINES).responseMs;
    this.#path = opts.url.pathname + opts.url.search;
    this.#authLog = new AuthFailureLog(opts.logger, opts.where, opts.configKey);
  }

  /**
   * Sends one body, retrying transient failures up to 5 attempts. Resolves on 2xx; throws
   * LokiRejectedError (400/413), LokiRateLimitedError (a 429 naming the tenant's ingestion limit, not
   * retried here) or RetryableSinkError (everything else that is not a success).
   */
  async send(request: EncodedRequest, signal?: AbortSignal): Promise<void> {
    try {
      await retry((ctx) => this.#attempt(request, ctx.signal), {
        policy: lokiRetryPolicy,
        clock: this.#opts.clock,
        isTransient: (err) => err instanceof TransientAttemptError,
        retryAfterMs: (err) => (err instanceof TransientAttemptError ? err.retryAfterMs : undefined),
        onRetry: (err, attempt, delayMs) => {
          this.#opts.logger.debug(
            { attempt, delayMs: Math.round(delayMs), err: describeError(err) },
            "Loki push attempt failed, retrying",
          );
        },
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) {
        throw new RetryableSinkError(`push to Loki at ${this.#opts.where} was cancelled; the batch is kept`, {
          cause: err,
        });
      }
      if (err instanceof TransientAttemptError) {
        throw new RetryableSinkError(
          `Loki push to ${this.#opts.where} failed after ${MAX_ATTEMPTS} attempts (last: ${err.message}); ` +
            `the batch is kept and retried`,
          err.retryAfterMs === undefined ? { cause: err } : { cause: err, retryAfterMs: err.retryAfterMs },
        );
      }
      throw err;
    }
  }

  async #attempt(request: EncodedRequest, signal: AbortSignal | undefined): Promise<void> {
    const { url, dispatcher } = this.#opts;
    let res: Exchanged;
    try {
      res = await exchange(
        dispatcher,
        {
          origin: url.origin,
          path: this.#path,
          method: "POST",
          headers: { ...request.headers, ...this.#opts.authHeaders, "user-agent": "sf2loki" },
          body: request.body,
          headersTimeout: this.#responseMs,
          bodyTimeout: this.#responseMs,
        },
        bodyBytesKept,
        signal,
      );
    } catch (err) {
      throw new TransientAttemptError(`transport error: ${describeError(err)}`, undefined, { cause: err });
    }
    const { status, text } = res;
    if (status >= 200 && status < 300) {
      // The push landed; a body that broke off after a 2xx changes nothing.
      this.#opts.bytesPushed.add(request.body.length);
      this.#authLog.succeeded();
      return;
    }
    if (res.bodyError) {
      throw new TransientAttemptError(
        `HTTP ${status}, body unreadable: ${describeError(res.bodyError)}`,
        undefined,
        { cause: res.bodyError },
      );
    }
    if (status === 400 || status === 413) throw new LokiRejectedError(status, text);
    const detail = collapse(text);
    const notice = status === 429 ? parseRateLimited(text) : undefined;
    // Retrying the same body at this tenant's limit can fail forever (a body above its burst): the
    // sink splits and paces instead of backing off blind.
    if (notice) throw new LokiRateLimitedError(this.#opts.where, notice, detail);
    if (status === 429 || status >= 500) {
      throw new TransientAttemptError(
        `HTTP ${status}: ${detail}`,
        parseRetryAfter(res.headers["retry-after"]),
      );
    }
    if (status === 401 || status === 403 || status === 404) {
      this.#authLog.failed(status, detail);
      throw new RetryableSinkError(
        `Loki at ${this.#opts.where} answered HTTP ${status} (${detail}): check ${this.#opts.configKey ?? "sink.loki"}.url, tenant_id and ` +
          `auth_token; the batch is kept and retried`,
      );
    }
    throw new RetryableSinkError(
      `Loki at ${this.#opts.where} answered unexpected HTTP ${status} (${detail}); the batch is kept and retried`,
    );
  }
}

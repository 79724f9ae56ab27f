// One HTTP push with its status classification and the internal retry loop (spec B §4.6–4.7), for
// the Loki push and the OTLP export alike. It knows nothing of batches: it sends a body and says what
// happened. What a receiver says about the data itself (Loki's 400s and rate limit, OTLP's 400) is
// the sink's to read: `refusal` hands those back untouched.
import type { IncomingHttpHeaders } from "node:http";
import type { Counter } from "@opentelemetry/api";
import type { Dispatcher } from "../../util/http-dispatchers.ts";
import { originDispatcher } from "../../util/routed-dispatchers.ts";
import { unreachable } from "../../util/proxy-fault.ts";
import type { TlsOptions } from "../../util/tls-files.ts";
import { describeError } from "../../errors.ts";
import type { Logger } from "../../obs/logger.ts";
import type { Clock } from "../../util/clock.ts";
import { retry } from "../../util/retry.ts";
import { RetryableSinkError, type RequestSlots } from "../sink.ts";
import { AuthFailureLog } from "./auth-failures.ts";
import { MAX_ATTEMPTS, parseRetryAfter, pushRetryPolicy } from "./retry-policy.ts";
import { exchange, type Exchanged } from "./exchange.ts";

/**
 * Every push ends: a connection opens within `connectMs`; the response headers arrive within
 * `responseMs` of the request being sent, and the body never goes `responseMs` without a byte. A
 * connection that died silently therefore costs one `responseMs`, then the attempt is retried
 * (undici drops the timed-out socket, so the retry opens a fresh one).
 */
export interface PushDeadlines {
  connectMs: number;
  responseMs: number;
}

export const PUSH_DEADLINES: Readonly<PushDeadlines> = { connectMs: 10_000, responseMs: 30_000 };

/** How much of a failure's body is kept for its message. */
export const DETAIL_MAX_BYTES = 2048;

/** A request body with its content headers. */
export interface EncodedRequest {
  readonly body: Buffer;
  readonly headers: Readonly<Record<string, string>>;
}

/** A receiver's answer: status, headers and the body's first bytes (as much as `keepBytes` keeps). */
export interface Answer {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly text: string;
  /** The same bytes, undecoded (a protobuf answer is not text). */
  readonly raw: Buffer;
}

export function collapse(text: string): string {
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

/**
 * The push URL origin's connections, kept alive, with the spec's timeouts: a Pool, or a proxying
 * dispatcher when HTTPS_PROXY / HTTP_PROXY route the origin through a proxy (routed-dispatchers.ts).
 */
export function createPushPool(
  origin: string,
  deadlines: PushDeadlines = PUSH_DEADLINES,
  tls?: TlsOptions,
): Dispatcher {
  return originDispatcher(origin, {
    connectMs: deadlines.connectMs,
    responseMs: deadlines.responseMs,
    keepAliveMs: 30_000,
    tls,
  });
}

export interface PushServiceOptions {
  url: URL;
  /** Where, for operator messages: the URL without userinfo or query. */
  where: string;
  /** Where its settings are in the config (`sink.loki`, `sink.otlp`), for the hint of a refused push. */
  configKey?: string;
  /** Who answers, for messages: `Loki`, `the OTLP receiver`. */
  peer: string;
  /** Sent with every request after the body's own: auth, tenant, operator-set extras. */
  headers: Readonly<Record<string, string>>;
  dispatcher: Dispatcher;
  clock: Clock;
  logger: Logger;
  bytesPushed: Counter;
  /** How much of an answer's body to keep, by status (the rest is read and dropped). */
  keepBytes: (status: number) => number;
  /** An answer the sink reads itself (thrown as is, not retried here); undefined: classified here. */
  refusal?: (answer: Answer) => Error | undefined;
  /** Defaults PUSH_DEADLINES; also applied per request, so an injected dispatcher gets them too. */
  deadlines?: PushDeadlines;
}

export class PushService {
  readonly #opts: PushServiceOptions;
  readonly #path: string;
  readonly #authLog: AuthFailureLog;
  readonly #responseMs: number;
  readonly #key: string;

  constructor(opts: PushServiceOptions) {
    this.#opts = opts;
    this.#responseMs = (opts.deadlines ?? PUSH_DEADLINES).responseMs;
    this.#path = opts.url.pathname + opts.url.search;
    this.#key = opts.configKey ?? "sink.loki";
    this.#authLog = new AuthFailureLog(opts.logger, opts.where, this.#key, opts.peer);
  }

  /**
   * Sends one body, retrying transient failures up to 5 attempts. Resolves with the 2xx answer;
   * throws what `refusal` made of an answer, or RetryableSinkError (everything else that is not a
   * success).
   */
  async send(request: EncodedRequest, signal?: AbortSignal, slots?: RequestSlots): Promise<Answer> {
    const { peer, where } = this.#opts;
    try {
      return await retry((ctx) => this.#held(slots, ctx.signal, () => this.#attempt(request, ctx.signal)), {
        policy: pushRetryPolicy,
        clock: this.#opts.clock,
        isTransient: (err) => err instanceof TransientAttemptError,
        retryAfterMs: (err) => (err instanceof TransientAttemptError ? err.retryAfterMs : undefined),
        onRetry: (err, attempt, delayMs) => {
          this.#opts.logger.debug(
            { attempt, delayMs: Math.round(delayMs), err: describeError(err) },
            `${peer} push attempt failed, retrying`,
          );
        },
        ...(signal ? { signal } : {}),
      });
    } catch (err) {
      if (signal?.aborted) {
        throw new RetryableSinkError(`push to ${peer} at ${where} was cancelled; the batch is kept`, {
          cause: err,
        });
      }
      if (err instanceof TransientAttemptError) {
        throw new RetryableSinkError(
          `${peer} push to ${where} failed after ${MAX_ATTEMPTS} attempts (last: ${err.message}); ` +
            `the batch is kept and retried`,
          err.retryAfterMs === undefined ? { cause: err } : { cause: err, retryAfterMs: err.retryAfterMs },
        );
      }
      throw err;
    }
  }

  /** One attempt holds a lane's slot while its request is open, not while it backs off (#37). */
  async #held<T>(
    slots: RequestSlots | undefined,
    signal: AbortSignal | undefined,
    fn: () => Promise<T>,
  ): Promise<T> {
    if (slots === undefined) return fn();
    const release = await slots.take(signal);
    try {
      return await fn();
    } finally {
      release();
    }
  }

  async #attempt(request: EncodedRequest, signal: AbortSignal | undefined): Promise<Answer> {
    const { url, dispatcher, peer, where } = this.#opts;
    let res: Exchanged;
    try {
      res = await exchange(
        dispatcher,
        {
          origin: url.origin,
          path: this.#path,
          method: "POST",
          headers: { ...request.headers, ...this.#opts.headers, "user-agent": "sf2loki" },
          body: request.body,
          headersTimeout: this.#responseMs,
          bodyTimeout: this.#responseMs,
        },
        this.#opts.keepBytes,
        signal,
      );
    } catch (err) {
      const { text } = unreachable(err, url);
      throw new TransientAttemptError(`transport error: ${text}`, undefined, { cause: err });
    }
    const { status, headers, raw, text } = res;
    const answer: Answer = { status, headers, raw, text };
    if (status >= 200 && status < 300) {
      // The push landed; a body that broke off after a 2xx changes nothing.
      this.#opts.bytesPushed.add(request.body.length);
      this.#authLog.succeeded();
      return answer;
    }
    if (res.bodyError) {
      throw new TransientAttemptError(
        `HTTP ${status}, body unreadable: ${describeError(res.bodyError)}`,
        undefined,
        { cause: res.bodyError },
      );
    }
    const refused = this.#opts.refusal?.(answer);
    if (refused) throw refused;
    const detail = collapse(answer.text);
    if (status === 429 || status >= 500) {
      throw new TransientAttemptError(`HTTP ${status}: ${detail}`, parseRetryAfter(headers["retry-after"]));
    }
    if (status === 401 || status === 403 || status === 404) {
      this.#authLog.failed(status, detail);
      throw new RetryableSinkError(
        `${peer} at ${where} answered HTTP ${status} (${detail}): check ${this.#key}.url, tenant_id and ` +
          `auth_token; the batch is kept and retried`,
      );
    }
    throw new RetryableSinkError(
      `${peer} at ${where} answered unexpected HTTP ${status} (${detail}); the batch is kept and retried`,
    );
  }
}

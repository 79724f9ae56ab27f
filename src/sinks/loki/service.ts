// The Loki push over the shared HTTP push (src/sinks/wire/push-service.ts): Loki's own answers about
// the data are read here, everything else (transport, 429/5xx retries, auth) is the shared loop's.
import type { Counter } from "@opentelemetry/api";
import { Sf2LokiError } from "../../errors.ts";
import type { Logger } from "../../obs/logger.ts";
import type { Clock } from "../../util/clock.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";
import type { TlsOptions } from "../../util/tls-files.ts";
import {
  DETAIL_MAX_BYTES,
  PUSH_DEADLINES,
  PushService,
  collapse,
  createPushPool,
  type Answer,
  type EncodedRequest,
  type PushDeadlines,
} from "../wire/push-service.ts";
import { LokiRateLimitedError, parseRateLimited } from "../receiving-loki/rate-limited.ts";
import type { RequestSlots } from "../sink.ts";

export type LokiDeadlines = PushDeadlines;
export const LOKI_DEADLINES = PUSH_DEADLINES;

/**
 * A 400 names every refused entry (about 200 bytes each, grouped when identical): 1 MiB holds the
 * report of several thousand. A longer body is cut, and the entries it no longer names stay unsettled.
 */
export const REJECTION_BODY_MAX_BYTES = 1_048_576;

/** Loki refused the payload itself (400/413): the caller isolates the poison entries. */
export class LokiRejectedError extends Sf2LokiError {
  readonly status: number;
  /** The body's start, whitespace collapsed, for messages. */
  readonly detail: string;
  /** The body as sent (up to 1 MiB), for reading Loki's per-entry refusals. */
  readonly body: string;
  constructor(status: number, body: string, peer = "Loki") {
    const detail = collapse(body.slice(0, DETAIL_MAX_BYTES));
    super("SF2LOKI_LOKI_REJECTED", `${peer} rejected the payload with HTTP ${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
    this.body = body;
  }
}

/** The push URL origin's keep-alive connections (direct, or through the environment's proxy). */
export function createLokiPool(
  origin: string,
  deadlines: LokiDeadlines = LOKI_DEADLINES,
  tls?: TlsOptions,
): Dispatcher {
  return createPushPool(origin, deadlines, tls);
}

/** What an answer's body is read for: a 400 names the refused entries, other failures say why. */
function bodyBytesKept(status: number): number {
  if (status >= 200 && status < 300) return 0;
  return status === 400 ? REJECTION_BODY_MAX_BYTES : DETAIL_MAX_BYTES;
}

/** Loki's answers about the data: a 400/413 refuses entries, a 429 may name the tenant's limit. */
function lokiRefusal(where: string): (answer: Answer) => Error | undefined {
  return ({ status, text }) => {
    if (status === 400 || status === 413) return new LokiRejectedError(status, text);
    const notice = status === 429 ? parseRateLimited(text) : undefined;
    // Retrying the same body at this tenant's limit can fail forever (a body above its burst): the
    // sink splits and paces instead of backing off blind.
    return notice ? new LokiRateLimitedError(where, notice, collapse(text)) : undefined;
  };
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
  readonly #push: PushService;

  constructor(opts: LokiServiceOptions) {
    this.#push = new PushService({
      url: opts.url,
      where: opts.where,
      ...(opts.configKey ? { configKey: opts.configKey } : {}),
      peer: "Loki",
      headers: opts.authHeaders,
      dispatcher: opts.dispatcher,
      clock: opts.clock,
      logger: opts.logger,
      bytesPushed: opts.bytesPushed,
      keepBytes: bodyBytesKept,
      refusal: lokiRefusal(opts.where),
      ...(opts.deadlines ? { deadlines: opts.deadlines } : {}),
    });
  }

  /**
   * Sends one body, retrying transient failures up to 5 attempts. Resolves on 2xx; throws
   * LokiRejectedError (400/413), LokiRateLimitedError (a 429 naming the tenant's ingestion limit, not
   * retried here) or RetryableSinkError (everything else that is not a success).
   */
  async send(request: EncodedRequest, signal?: AbortSignal, slots?: RequestSlots): Promise<void> {
    await this.#push.send(request, signal, slots);
  }
}

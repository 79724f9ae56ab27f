// What counts as a blip worth retrying, for both object stores: throttling and server statuses, and
// every way a socket can fail before, during or after a request (including a body that dies mid-transfer).
import { Sf2LokiError } from "../errors.ts";
import { StateUnavailableError } from "./errors.ts";

/** S3 error codes that mean "try again" (spec C §1.7), plus the throttling names other SDKs use. */
export const TRANSIENT_CODES: ReadonlySet<string> = new Set([
  "SlowDown",
  "InternalError",
  "InternalFailure",
  "ServiceUnavailable",
  "RequestTimeout",
  "RequestTimeTooSkewed",
  "Throttling",
  "ThrottlingException",
  "RequestLimitExceeded",
  "TooManyRequests",
  "TooManyRequestsException",
]);

export function isTransientStatus(status: number | undefined): boolean {
  return status !== undefined && (status === 408 || status === 429 || status >= 500);
}

const NETWORK_CODES: ReadonlySet<string> = new Set([
  "ECONNRESET",
  "ECONNREFUSED",
  "ECONNABORTED",
  "EPIPE",
  "ETIMEDOUT",
  "EAI_AGAIN",
  "ENETUNREACH",
  "ENETDOWN",
  "EHOSTUNREACH",
  "ERR_STREAM_PREMATURE_CLOSE",
  "UND_ERR_SOCKET",
  "UND_ERR_CONNECT_TIMEOUT",
  "UND_ERR_HEADERS_TIMEOUT",
  "UND_ERR_BODY_TIMEOUT",
]);

// Node and fetch libraries sometimes report a dead socket only in words.
// Whole words: V8's "Unterminated string in JSON" (a corrupt object) is not a dead socket.
const NETWORK_MESSAGES =
  /\b(?:socket hang up|premature close|other side closed|aborted|socket timeout|network timeout|timed out|terminated)\b/i;

/**
 * True for a failure of the connection itself, looking through `cause` chains (fetch wraps the socket
 * error). Cancellation (AbortError) is never a network failure: it must stop the retry loop.
 */
export function isNetworkError(err: unknown): boolean {
  for (let e: unknown = err, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    if (e.name === "AbortError") return false;
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && NETWORK_CODES.has(code)) return true;
    if (e.name === "TimeoutError") return true;
    if (
      NETWORK_MESSAGES.test(e.message) &&
      (e as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === undefined
    ) {
      return true;
    }
  }
  return false;
}

/**
 * A store that did not answer: a connection failure, or a throttling or server status after the retries
 * (S3's `$metadata.httpStatusCode`, GCS's numeric `code`, Azure's `statusCode`). For messages, not retries.
 */
export function isOutage(err: unknown): boolean {
  // The store's own typed errors (corrupt, locked, fenced, denied, unavailable) already say what
  // happened: never re-read as an outage because a cause deep inside mentions a socket.
  if (err instanceof StateUnavailableError) return true;
  if (err instanceof Sf2LokiError) return false;
  if (isNetworkError(err)) return true;
  const e = (err ?? {}) as { $metadata?: { httpStatusCode?: number }; code?: unknown; statusCode?: unknown };
  const status = e.$metadata?.httpStatusCode ?? (typeof e.code === "number" ? e.code : undefined);
  return isTransientStatus(status ?? (typeof e.statusCode === "number" ? e.statusCode : undefined));
}

/**
 * The bucket or container itself is missing (S3's NoSuchBucket, Azure's ContainerNotFound, GCS's 404
 * "The specified bucket does not exist."): a set-up step, not an outage and not an absent object.
 */
export function isMissingBucket(err: unknown): boolean {
  const e = (err ?? {}) as { name?: unknown; code?: unknown; statusCode?: unknown; message?: unknown };
  if (e.name === "NoSuchBucket" || e.code === "NoSuchBucket" || e.code === "ContainerNotFound") return true;
  const status = typeof e.code === "number" ? e.code : e.statusCode;
  return status === 404 && typeof e.message === "string" && /bucket does not exist/i.test(e.message);
}

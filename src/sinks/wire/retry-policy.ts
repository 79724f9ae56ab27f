// A push's internal retry schedule and Retry-After reading (spec B §4.6), for either sink.
import type { RetryPolicy } from "../../util/retry.ts";

export const MAX_ATTEMPTS = 5;
const MIN_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = 30_000;
const RETRY_AFTER_CAP_MS = 60_000;

/** U(0.5 s, min(30 s, 2^(n-1) s)) before attempt n+1: ≈ U(.5,1), U(.5,2), U(.5,4), U(.5,8). */
export const pushRetryPolicy: RetryPolicy = {
  maxAttempts: MAX_ATTEMPTS,
  backoffMs(attempt, random) {
    const hi = Math.max(MIN_BACKOFF_MS, Math.min(MAX_BACKOFF_MS, 1000 * 2 ** (attempt - 1)));
    return MIN_BACKOFF_MS + random() * (hi - MIN_BACKOFF_MS);
  },
};

const DELTA_SECONDS = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/**
 * Delta-seconds only (fractions allowed, negative → 0), capped at 60 s; an HTTP-date or garbage is
 * ignored (undefined), so a misbehaving proxy cannot park the sink.
 */
export function parseRetryAfter(header: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(header) ? header[0] : header;
  if (raw === undefined) return undefined;
  const text = raw.trim();
  if (!DELTA_SECONDS.test(text)) return undefined;
  return Math.min(Math.max(0, Number(text)) * 1000, RETRY_AFTER_CAP_MS);
}

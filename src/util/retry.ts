// The one retry loop. It knows the attempt number, so callers can treat a failure on a retry
// differently from one on the first try (the object stores' verify-before-conflict rule needs this).
import type { Clock } from "./clock.ts";

export interface RetryPolicy {
  /** Total attempts, the first one included. */
  maxAttempts: number;
  /** Delay before attempt n+1 is drawn from this (attempt is 1-based: the one that just failed). */
  backoffMs(attempt: number, random: () => number): number;
}

/** Jittered exponential: U(0, min(cap, base * 2^(attempt-1))), the "full jitter" schedule. */
export function fullJitter(baseMs: number, capMs: number): RetryPolicy["backoffMs"] {
  return (attempt, random) => random() * Math.min(capMs, baseMs * 2 ** (attempt - 1));
}

export interface AttemptContext {
  /** 1-based attempt number. */
  attempt: number;
  signal?: AbortSignal;
}

/**
 * Runs `fn` until it succeeds, `isTransient` says no, or attempts run out; then rethrows the
 * original error of the last attempt. `retryAfterMs` lets an error ask for a longer wait.
 */
export async function retry<T>(
  fn: (ctx: AttemptContext) => Promise<T>,
  opts: {
    policy: RetryPolicy;
    clock: Clock;
    isTransient: (err: unknown) => boolean;
    signal?: AbortSignal;
    retryAfterMs?: (err: unknown) => number | undefined;
    onRetry?: (err: unknown, attempt: number, delayMs: number) => void;
  },
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn(opts.signal ? { attempt, signal: opts.signal } : { attempt });
    } catch (err) {
      if (attempt >= opts.policy.maxAttempts || !opts.isTransient(err) || opts.signal?.aborted) throw err;
      let delayMs = opts.policy.backoffMs(attempt, () => opts.clock.random());
      const asked = opts.retryAfterMs?.(err);
      if (asked !== undefined) delayMs = Math.max(delayMs, asked);
      opts.onRetry?.(err, attempt, delayMs);
      await opts.clock.sleep(delayMs, opts.signal);
    }
  }
}

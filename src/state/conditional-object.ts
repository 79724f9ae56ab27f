// The one implementation of reading and conditionally writing a whole object on S3 or GCS, shared by
// the checkpoint store and the object lease. Writes follow the verify-before-conflict rule of #129: a
// 412 on the first attempt is a lost race (no extra request), but a 412 on a retry may be our own
// earlier attempt that landed while its acknowledgement was lost, so there the object is read back
// once and compared byte for byte before anyone calls it a conflict. Callers map the typed outcomes to
// their own errors: the store raises StateStoreConflictError, the lease loses the lease.
import { Sf2LokiError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import type { Clock } from "../util/clock.ts";
import { retry, type RetryPolicy } from "../util/retry.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";

/** At most 4 attempts; the wait after attempt n is uniform in [0.1 s, min(2 s, 2^(n-1) s)] (spec C §1.7). */
export const OBJECT_STORE_RETRY: RetryPolicy = {
  maxAttempts: 4,
  backoffMs: (attempt, random) => {
    const ceiling = Math.min(2000, 1000 * 2 ** (attempt - 1));
    return 100 + random() * (ceiling - 100);
  },
};

export interface ObjectCallOptions {
  clock: Clock;
  policy: RetryPolicy;
  /** Bound to the caller's component; retries and recovered writes are logged here at WARN. */
  log: Logger;
  /** What a write is called in the recovery warning: "write", "lease write". */
  what: string;
  /**
   * Runs before every write attempt, the first and each retry; a throw ends the write with that error.
   * HA: the leadership fence, so a retry never lands after this replica's term ended (#17).
   */
  beforeAttempt?: () => void | Promise<void>;
}

export type PutOutcome =
  /** `token` undefined: the store confirmed the write but named no version. */
  | { kind: "written"; token: string | undefined }
  /**
   * The object is not at the version named. `found` says what the check saw: a 412 on the first
   * attempt (`race`), or after a retry someone else's bytes (`other-bytes`) or no object (`absent`).
   * `cause` is the 412.
   */
  | { kind: "conflict"; found: "race" | "other-bytes" | "absent"; cause: unknown }
  /** A 412 on a retry, and reading the object back to check it failed: the outcome is unknown. */
  | { kind: "unverified"; cause: unknown };

/**
 * One whole-object GET per attempt (bytes and token from one response, so a body that dies mid-transfer
 * re-issues the GET), transient errors retried; the last attempt's original error is rethrown.
 */
export function getObject(
  backend: ObjectBackend,
  opts: ObjectCallOptions,
  signal: AbortSignal,
): Promise<StoredObject | undefined> {
  return retried(backend, opts, signal, () => backend.get(signal));
}

/**
 * Writes the whole object under `precondition`, retrying transient errors. Conflicts are outcomes, not
 * throws; any other failure (S3's 409 ConditionalRequestConflict after the last attempt included) is
 * the original error, for the caller to classify.
 */
export function putObjectConditionally(
  backend: ObjectBackend,
  bytes: Uint8Array,
  precondition: Precondition,
  opts: ObjectCallOptions,
  signal: AbortSignal,
): Promise<PutOutcome> {
  return retried(backend, opts, signal, async (attempt): Promise<PutOutcome> => {
    await opts.beforeAttempt?.();
    try {
      return { kind: "written", token: await backend.put(bytes, precondition, signal) };
    } catch (err) {
      const verdict = backend.classify(err);
      if (verdict === "precondition-failed") {
        if (attempt === 1) return { kind: "conflict", found: "race", cause: err };
        return verifyOwnWrite(backend, bytes, opts, signal, attempt, err);
      }
      if (verdict === "concurrent-conflict" && attempt > 1) {
        // S3's 409: the write it says is in progress may be our own earlier attempt, or already done.
        const current = await getObject(backend, opts, signal).catch(() => undefined);
        if (current && sameBytes(current.bytes, bytes)) return recovered(backend, opts, current, attempt);
      }
      throw err;
    }
  });
}

/** A 412 on a retry: success if the stored bytes are exactly what this call wrote, else a conflict. */
async function verifyOwnWrite(
  backend: ObjectBackend,
  bytes: Uint8Array,
  opts: ObjectCallOptions,
  signal: AbortSignal,
  attempt: number,
  preconditionErr: unknown,
): Promise<PutOutcome> {
  let current: StoredObject | undefined;
  try {
    current = await getObject(backend, opts, signal);
  } catch (probeErr) {
    return { kind: "unverified", cause: probeErr };
  }
  if (!current) return { kind: "conflict", found: "absent", cause: preconditionErr };
  if (!sameBytes(current.bytes, bytes))
    return { kind: "conflict", found: "other-bytes", cause: preconditionErr };
  return recovered(backend, opts, current, attempt);
}

function recovered(
  backend: ObjectBackend,
  opts: ObjectCallOptions,
  current: StoredObject,
  attempt: number,
): PutOutcome {
  opts.log.warn(
    { object: backend.hints.location, attempt, token: current.token },
    `recovered an applied-but-unacknowledged ${opts.what}: an earlier attempt landed although its response ` +
      "was lost; adopting the stored version (no second writer involved)",
  );
  return { kind: "written", token: current.token };
}

function retried<T>(
  backend: ObjectBackend,
  opts: ObjectCallOptions,
  signal: AbortSignal,
  fn: (attempt: number) => Promise<T>,
): Promise<T> {
  return retry(({ attempt }) => fn(attempt), {
    policy: opts.policy,
    clock: opts.clock,
    signal,
    isTransient: (err) => !(err instanceof Sf2LokiError) && isRetryable(backend.classify(err)),
    onRetry: (err, attempt, delayMs) => {
      opts.log.warn(
        { attempt, delayMs: Math.round(delayMs), err: err instanceof Error ? err.message : String(err) },
        "transient object-store error; retrying",
      );
    },
  });
}

function isRetryable(verdict: ErrorClass): boolean {
  return verdict === "transient" || verdict === "concurrent-conflict";
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

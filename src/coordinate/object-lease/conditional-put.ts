// The lease's calls on the state layer's ObjectBackend (the same S3 and GCS adapters, error verdicts
// and retry policy the checkpoint stores use), with the engine's attempt-aware rule: a 412 on the
// first attempt is a lost race, but a 412 on a retry may be our own earlier attempt that landed while
// its acknowledgement was lost (#129), so there the object is read back and compared byte for byte.
import type { Logger } from "../../obs/logger.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "../../state/object-backend.ts";
import type { Clock } from "../../util/clock.ts";
import { retry, type RetryPolicy } from "../../util/retry.ts";

export interface ObjectCallOptions {
  clock: Clock;
  policy: RetryPolicy;
  log: Logger;
}

export type PutOutcome =
  /** `token` undefined: the store confirmed the write but named no version. */
  | { kind: "written"; token: string | undefined }
  /** The object is not at the version named: another writer moved it, or deleted it. */
  | { kind: "conflict" };

/** One whole-object GET per attempt (bytes and token from one response), transient errors retried. */
export function getObject(
  backend: ObjectBackend,
  opts: ObjectCallOptions,
  signal: AbortSignal,
): Promise<StoredObject | undefined> {
  return retried(backend, opts, signal, () => backend.get(signal));
}

export async function putObject(
  backend: ObjectBackend,
  bytes: Uint8Array,
  precondition: Precondition,
  opts: ObjectCallOptions,
  signal: AbortSignal,
): Promise<PutOutcome> {
  return retried(backend, opts, signal, async (attempt) => {
    try {
      return { kind: "written", token: await backend.put(bytes, precondition, signal) };
    } catch (err) {
      const verdict = backend.classify(err);
      if (verdict === "precondition-failed") {
        if (attempt === 1) return { kind: "conflict" };
        // Read errors propagate: after a lost acknowledgement the outcome is unknown, not a conflict.
        const current = await getObject(backend, opts, signal);
        return current && sameBytes(current.bytes, bytes)
          ? recovered(opts.log, backend, current.token, attempt)
          : { kind: "conflict" };
      }
      if (verdict === "concurrent-conflict" && attempt > 1) {
        // S3's 409: the write it says is in progress may be our own earlier attempt, or already done.
        const current = await getObject(backend, opts, signal).catch(() => undefined);
        if (current && sameBytes(current.bytes, bytes)) {
          return recovered(opts.log, backend, current.token, attempt);
        }
      }
      throw err;
    }
  });
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
    isTransient: (err) => isRetryable(backend.classify(err)),
    onRetry: (err, attempt, delayMs) => {
      opts.log.warn(
        { attempt, delayMs: Math.round(delayMs), err: err instanceof Error ? err.message : String(err) },
        "transient object-store error on the lease; retrying",
      );
    },
  });
}

function recovered(log: Logger, backend: ObjectBackend, token: string, attempt: number): PutOutcome {
  log.warn(
    { object: backend.hints.location, attempt, token },
    "recovered an applied-but-unacknowledged lease write: an earlier attempt landed although its response " +
      "was lost; adopting the stored version (no second writer involved)",
  );
  return { kind: "written", token };
}

function isRetryable(verdict: ErrorClass): boolean {
  return verdict === "transient" || verdict === "concurrent-conflict";
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

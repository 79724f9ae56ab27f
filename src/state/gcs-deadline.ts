// A deadline on every GCS call. @google-cloud/storage sends requests through teeny-request and
// node-fetch 3, which ignores the `timeout` option and takes no AbortSignal, so a request on a
// connection that died silently would wait for the kernel to give up (TCP retransmission: ~15 min).
// The deadline ends the call for us: a download is destroyed (its socket with it, once the response
// has begun); a request still waiting for its response is abandoned on the dead socket, which only
// the kernel reclaims, while the retry goes out on a fresh connection.
import { abortable } from "../util/abortable.ts";

/** A GCS call got no complete answer in time; transient (code ETIMEDOUT), so it is retried. */
export class GcsTimeoutError extends Error {
  readonly code = "ETIMEDOUT";
  constructor(what: string, ms: number, options?: { cause?: unknown }) {
    super(`${what} got no complete answer within ${String(ms)} ms`, options);
    this.name = "TimeoutError";
  }
}

/**
 * `run` with a signal that aborts at the caller's abort or `ms` later; settles at the first of the
 * three. A timeout rejects with GcsTimeoutError, a caller abort with the caller's reason.
 */
export async function withGcsDeadline<T>(
  ms: number,
  signal: AbortSignal,
  what: string,
  run: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  signal.throwIfAborted();
  const timer = AbortSignal.timeout(ms);
  const bound = AbortSignal.any([signal, timer]);
  try {
    return await abortable(run(bound), bound);
  } catch (err) {
    // The caller's own failure or abort reason passes through untouched; only the deadline is ours.
    if (timer.aborted && !signal.aborted) throw new GcsTimeoutError(what, ms, { cause: err });
    throw err;
  }
}

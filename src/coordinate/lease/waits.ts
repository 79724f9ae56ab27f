// Bounded, cancellable waits on the injected clock, so a hung lease call or a stop never wedges the loop.
import type { Clock } from "../../util/clock.ts";
import { LeaseTimeoutError } from "../errors.ts";

/** Sleeps `ms`; false when `signal` aborted first. */
export async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await clock.sleep(ms, signal);
    return true;
  } catch {
    return false;
  }
}

/**
 * A signal that aborts when `parent` does, or `ms` later on `clock` with `reason()`. `dispose` cancels
 * the timer and detaches from the parent; call it in a finally.
 */
export function deadlineSignal(
  clock: Clock,
  ms: number,
  parent: AbortSignal,
  reason: () => unknown,
): { signal: AbortSignal; dispose: () => void } {
  const ctl = new AbortController();
  const timer = new AbortController();
  const onParent = (): void => {
    ctl.abort(parent.reason);
  };
  if (parent.aborted) ctl.abort(parent.reason);
  else if (ms <= 0) ctl.abort(reason());
  else {
    parent.addEventListener("abort", onParent, { once: true });
    clock.sleep(ms, timer.signal).then(
      () => {
        ctl.abort(reason());
      },
      () => undefined,
    );
  }
  return {
    signal: ctl.signal,
    dispose: () => {
      timer.abort();
      parent.removeEventListener("abort", onParent);
    },
  };
}

/**
 * Runs `fn` with a signal bounded by `ms`; stops waiting the moment that signal aborts, even when the
 * underlying call ignores it (a rename on a hung NFS mount cannot be cancelled, only abandoned).
 */
export async function withTimeout<T>(
  clock: Clock,
  ms: number,
  parent: AbortSignal,
  what: string,
  fn: (signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const bound = deadlineSignal(clock, ms, parent, () => new LeaseTimeoutError(what, ms));
  try {
    // Never start a call whose answer nobody would wait for: a lease write must not land unobserved.
    bound.signal.throwIfAborted();
    return await raceAbort(fn(bound.signal), bound.signal);
  } finally {
    bound.dispose();
  }
}

/** `work`, or a rejection with the signal's reason as soon as it aborts (work's own outcome is dropped). */
export async function raceAbort<T>(work: Promise<T>, signal: AbortSignal): Promise<T> {
  let onAbort!: () => void;
  const aborted = new Promise<never>((_, reject) => {
    onAbort = () => {
      reject(signal.reason as Error);
    };
  });
  if (signal.aborted) onAbort();
  else signal.addEventListener("abort", onAbort, { once: true });
  try {
    // race() subscribes to `work`, so its late rejection after an abort is never unhandled.
    return await Promise.race([work, aborted]);
  } finally {
    signal.removeEventListener("abort", onAbort);
  }
}

/** Resolves when `work` settles or `signal` aborts, whichever is first; never rejects. */
export async function settledOrAborted(work: Promise<unknown>, signal: AbortSignal): Promise<void> {
  try {
    await raceAbort(work, signal);
  } catch {
    // Either outcome only means "stop waiting".
  }
}

/** Resolves once `signal` aborts. */
export function whenAborted(signal: AbortSignal): Promise<void> {
  if (signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    signal.addEventListener(
      "abort",
      () => {
        resolve();
      },
      { once: true },
    );
  });
}

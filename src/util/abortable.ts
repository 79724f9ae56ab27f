// For a client call that takes no AbortSignal: the caller stops waiting when `signal` aborts (with its
// reason); the call itself runs on to its own deadline and its outcome is dropped.
/** What to throw for an aborted `signal`: its reason when that is an Error, else one that carries it. */
export function abortReason(signal: AbortSignal): Error {
  return signal.reason instanceof Error ? signal.reason : new Error("aborted", { cause: signal.reason });
}

export function abortable<T>(call: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason as Error);
    };
    signal.addEventListener("abort", onAbort, { once: true });
    call
      .finally(() => {
        signal.removeEventListener("abort", onAbort);
      })
      .then(resolve, reject);
  });
}

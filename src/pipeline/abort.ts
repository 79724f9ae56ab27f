// Telling "this wait was cut short by our own signal" apart from a real failure.

/** True when `signal` has aborted and `err` is its reason or a platform AbortError. */
export function isAbortFrom(err: unknown, signal: AbortSignal): boolean {
  if (!signal.aborted) return false;
  return err === signal.reason || (err instanceof Error && err.name === "AbortError");
}

export function ignore(): void {
  // A rejection that is expected and already accounted for.
}

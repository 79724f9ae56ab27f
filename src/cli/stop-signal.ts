// SIGINT or SIGTERM asks a long-running command to stop cleanly: an AbortSignal the command passes on,
// and a `dispose` for its finally, so a second command in the same process starts with no listener.

export interface StopOnSignals {
  readonly signal: AbortSignal;
  dispose(): void;
}

export function stopOnSignals(): StopOnSignals {
  const stop = new AbortController();
  const onSignal = (): void => {
    stop.abort();
  };
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);
  return {
    signal: stop.signal,
    dispose: () => {
      process.removeListener("SIGINT", onSignal);
      process.removeListener("SIGTERM", onSignal);
    },
  };
}

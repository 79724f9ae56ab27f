// Runs a daemon app in process until the test's condition holds, bounded, then stops it and waits for
// its drain: the loop several end-to-end tests share.

/** Runs `app` until `until()` holds (checked every `everyMs`) or `boundMs` passed, then stops it. */
export async function runAppUntil(
  app: { run(signal: AbortSignal): Promise<void> },
  until: () => boolean,
  boundMs = 60_000,
  everyMs = 100,
): Promise<void> {
  const stop = new AbortController();
  const poll = setInterval(() => {
    if (until()) stop.abort();
  }, everyMs);
  const deadline = setTimeout(() => {
    stop.abort();
  }, boundMs);
  try {
    await app.run(stop.signal);
  } finally {
    clearInterval(poll);
    clearTimeout(deadline);
  }
}

// Real-time helpers for the deadline tests, which measure how long a call on a dead connection takes.
import { setTimeout as sleep } from "node:timers/promises";

/** Runs `fn` and returns how long it took, in ms. */
export async function timed(fn: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await fn();
  return performance.now() - start;
}

/** The error `work` rejects with, or undefined when it resolves. */
export function failureOf(work: Promise<unknown>): Promise<unknown> {
  return work.then(
    () => undefined,
    (err: unknown) => err,
  );
}

/** Polls `cond` every 5 ms; fails instead of hanging after `ms`. */
export async function waitFor(cond: () => boolean, what: string, ms = 2_000): Promise<void> {
  const end = performance.now() + ms;
  while (!cond()) {
    if (performance.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(5);
  }
}

/** Lets an HTTP client return a finished request's socket to its pool, so the next call reuses it. */
export async function idle(): Promise<void> {
  await sleep(20);
}

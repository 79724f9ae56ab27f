// Reconnect timing shared by the topic tasks and rediscovery; its own file so the source can use it
// without loading the topic task (and gRPC) before a run starts.
import type { Clock } from "../../util/clock.ts";

export const RECONNECT_BASE_MS = 1_000;
export const RECONNECT_CAP_MS = 30_000;

/** Reads the flag afresh (TS narrows `signal.aborted` across awaits as if it could not change). */
export function stopped(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** Backoff plus U(0, backoff/2) jitter. */
export function jittered(backoffMs: number, clock: Clock): number {
  return backoffMs + clock.random() * (backoffMs / 2);
}

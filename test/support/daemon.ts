// Helpers for end-to-end tests that run the daemon as a real process or wait on real sockets.
import { spawn, type ChildProcess } from "node:child_process";
import { setTimeout as delay } from "node:timers/promises";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;

/** Polls `cond` every 100 ms for at most `ms`; these tests wait on real processes and sockets. */
export async function waitFor(cond: () => boolean, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(100);
  }
}

/**
 * `sf2loki --config <config>` as a child process; stderr (errors) is piped for diagnostics. The JSON
 * log goes to stdout, which is ignored: an unread pipe would stall the child once it fills.
 */
export function spawnDaemon(config: string): ChildProcess {
  return spawn(process.execPath, [BIN, "--config", config], { stdio: ["ignore", "ignore", "pipe"] });
}

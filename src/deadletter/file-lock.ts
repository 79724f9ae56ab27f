// A short-lived lock around each change to the dead-letter directory: the daemon appends while an
// operator's `sf2loki deadletter replay|purge` rewrites segments, and neither may lose the other's
// lines. Held for one append or one rewrite (milliseconds), so a holder that crashed is recognised by
// the lock's age alone.
import { open, stat, unlink } from "node:fs/promises";
import type { Clock } from "../util/clock.ts";
import { errnoCode } from "../state/state-fs.ts";
import { DeadLetterStoreError } from "./errors.ts";

/** Older than this, a lock is a crashed holder's (no live holder keeps it more than a moment). */
const STALE_AFTER_MS = 30_000;
const POLL_MS = 25;
/** How long a change waits for the other process's before it gives up (and its caller retries). */
const WAIT_MS = 10_000;

export async function withDirectoryLock<T>(
  lockPath: string,
  clock: Clock,
  signal: AbortSignal,
  fn: () => Promise<T>,
): Promise<T> {
  const started = clock.monotonic();
  for (;;) {
    try {
      const handle = await open(lockPath, "wx", 0o600);
      await handle.writeFile(`${process.pid}\n`);
      await handle.close();
      break;
    } catch (err) {
      if (errnoCode(err) !== "EEXIST") throw err;
    }
    const age = await lockAge(lockPath, clock);
    if (age !== undefined && age > STALE_AFTER_MS) {
      await unlink(lockPath).catch(() => undefined);
      continue;
    }
    if (clock.monotonic() - started > WAIT_MS) {
      throw new DeadLetterStoreError(
        `the dead-letter lock ${lockPath} has been held for over ${WAIT_MS / 1000} s by another process ` +
          `(a running 'sf2loki deadletter' command?); it is taken over once ${STALE_AFTER_MS / 1000} s old`,
      );
    }
    await clock.sleep(POLL_MS, signal);
  }
  try {
    return await fn();
  } finally {
    await unlink(lockPath).catch(() => undefined);
  }
}

async function lockAge(path: string, clock: Clock): Promise<number | undefined> {
  try {
    return clock.now() - (await stat(path)).mtimeMs;
  } catch {
    return undefined;
  }
}

// `state` for the file store: the real directory, the real state file (read and parsed, never written)
// and the real `.lock` sidecar, taken and released exactly as the daemon takes it (#101; Python probed a
// side file and could pass while the daemon crash-looped on the lock).
import { constants } from "node:fs";
import { access, mkdir, stat } from "node:fs/promises";
import { dirname } from "node:path";
import { describeError } from "../../errors.ts";
import { StateFileLockError } from "../../state/errors.ts";
import { FileCheckpointStore } from "../../state/file-store.ts";
import { FileLock } from "../../state/file-lock.ts";
import type { FileStateSettings } from "../../state/settings.ts";
import { fail, pass, warn, type CheckRow } from "../check.ts";

const OWNERSHIP_FIX = "the image runs as uid 10001: chown 10001 the directory and chmod 770 it";

export async function checkFileState(settings: FileStateSettings, lockTaken: boolean): Promise<CheckRow> {
  const path = settings.path;
  const dir = dirname(path);
  try {
    // The daemon creates a missing state directory when it first takes the lock; so does this probe.
    await mkdir(dir, { recursive: true });
    const s = await stat(dir);
    if (!s.isDirectory())
      return fail("state", `${dir} (the state directory) is not a directory; fix state.file.path`);
    await access(dir, constants.W_OK | constants.X_OK);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM") {
      return fail("state", `state directory ${dir} is not writable by this user (${code}); ${OWNERSHIP_FIX}`);
    }
    return fail("state", `state directory ${dir} is not usable: ${describeError(err)}`);
  }
  // The real document, read and parsed by the daemon's own store (no lock, no write).
  let keys: number;
  try {
    keys = Object.keys(await new FileCheckpointStore(settings, { exclusiveLock: false }).snapshot()).length;
  } catch (err) {
    return fail("state", describeError(err));
  }
  if (!lockTaken) {
    return pass(
      "state",
      `${path} is readable (${keys} checkpoint(s)); directory writable; lock not used (coordinate.type is not noop)`,
    );
  }
  const lock = new FileLock(path, { heartbeatMs: 0 });
  try {
    await lock.acquire();
  } catch (err) {
    if (err instanceof StateFileLockError) {
      return warn(
        "state",
        `${describeError(err)} (normal while the daemon runs; a daemon starting now would fail on it)`,
      );
    }
    const code = (err as NodeJS.ErrnoException).code;
    if (code === "EACCES" || code === "EPERM") {
      return fail("state", `cannot create the lock ${lock.lockPath} (${code}); ${OWNERSHIP_FIX}`);
    }
    return fail("state", `taking the lock ${lock.lockPath} failed: ${describeError(err)}`);
  } finally {
    await lock.release().catch(() => undefined);
  }
  return pass(
    "state",
    `${path} is readable (${keys} checkpoint(s)); directory ${dir} writable; lock ${lock.lockPath} taken and released`,
  );
}

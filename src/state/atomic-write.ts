// Replace a file so that a crash at any moment leaves either the old content or the new, never a mix:
// temp file in the same directory, fsync, rename over the target, fsync the directory.
import { randomUUID } from "node:crypto";
import { basename, dirname, join } from "node:path";
import { errnoCode, type StateFs } from "./state-fs.ts";

/**
 * `beforeRename` runs after the temp file is durable and right before the rename: a last check (the HA
 * fence) as close to the moment the new content becomes visible as a file system allows.
 */
export async function writeFileAtomic(
  fs: StateFs,
  path: string,
  bytes: Uint8Array,
  beforeRename?: () => void | Promise<void>,
): Promise<void> {
  const dir = dirname(path);
  await fs.mkdir(dir, { recursive: true });
  const temp = join(dir, `.${basename(path)}.${randomUUID()}.tmp`);
  try {
    const handle = await fs.open(temp, "wx", 0o600);
    try {
      await handle.writeFile(bytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await beforeRename?.();
    await fs.rename(temp, path);
  } catch (err) {
    await fs.unlink(temp).catch(() => undefined);
    throw err;
  }
  await syncDirectory(fs, dir);
}

/** Makes the rename itself durable. Some filesystems cannot fsync a directory; that is not an error. */
async function syncDirectory(fs: StateFs, dir: string): Promise<void> {
  let handle;
  try {
    handle = await fs.open(dir, "r");
    await handle.sync();
  } catch (err) {
    const code = errnoCode(err);
    if (code !== "EISDIR" && code !== "EINVAL" && code !== "EPERM" && code !== "ENOTSUP") throw err;
  } finally {
    await handle?.close();
  }
}

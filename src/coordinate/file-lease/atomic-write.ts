// Replace a small file so that readers on shared storage see the old bytes or the new, never a mix:
// a temp file in the same directory, fsync, rename over the target, fsync the directory.
import { randomBytes } from "node:crypto";
import type * as fsp from "node:fs/promises";
import { basename, dirname, join } from "node:path";

/** The slice of node:fs/promises the file lease uses; tests wrap it to inject storage faults. */
export type LeaseFs = Pick<typeof fsp, "readFile" | "open" | "rename" | "mkdir" | "unlink">;

export async function replaceFile(
  fs: LeaseFs,
  path: string,
  text: string,
  signal: AbortSignal,
): Promise<void> {
  const dir = dirname(path);
  await fs.mkdir(dir, { recursive: true });
  const tmp = join(dir, `.${basename(path)}.${randomBytes(6).toString("hex")}.tmp`);
  let handle: fsp.FileHandle | undefined;
  try {
    // 0644: every replica must read the lease, and they may run under different uids.
    handle = await fs.open(tmp, "wx", 0o644);
    await handle.writeFile(text);
    await handle.sync();
    await handle.close();
    handle = undefined;
    // The caller gave up waiting (a timeout, a stop): a rename now would land unobserved.
    signal.throwIfAborted();
    await fs.rename(tmp, path);
  } catch (err) {
    await handle?.close().catch(() => undefined);
    await fs.unlink(tmp).catch(() => undefined);
    throw err;
  }
  await syncDirectory(fs, dir);
}

/** Makes the rename itself durable. Some network filesystems refuse a directory fsync; the rename stands. */
async function syncDirectory(fs: LeaseFs, dir: string): Promise<void> {
  try {
    const handle = await fs.open(dir, "r");
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
  } catch {
    // Best effort by design: see the function comment.
  }
}

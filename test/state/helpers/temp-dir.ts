import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";

/** A fresh directory under the OS temp dir, removed when the test ends. */
export async function tempDir(t: TestContext): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sf2loki-state-"));
  t.after(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after } from "node:test";

/** A temp directory removed when the test file finishes. */
export function tempDir(prefix = "sf2loki-"): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  after(() => {
    rmSync(dir, { recursive: true, force: true });
  });
  return dir;
}

export function writeFile(dir: string, name: string, text: string): string {
  const path = join(dir, name);
  writeFileSync(path, text);
  return path;
}

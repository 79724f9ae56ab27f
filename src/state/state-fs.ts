// The file operations the file store and its lock use, as one injectable seam: tests swap a single
// operation (a rename that fails, say) to simulate a crash at an exact step.
import * as fsp from "node:fs/promises";

export type StateFs = Pick<
  typeof fsp,
  "readFile" | "open" | "rename" | "unlink" | "mkdir" | "stat" | "utimes"
>;

export const nodeStateFs: StateFs = fsp;

export function errnoCode(err: unknown): string | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  return typeof code === "string" ? code : undefined;
}

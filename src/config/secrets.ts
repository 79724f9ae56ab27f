// Secret resolution: an inline value wins; a blank one counts as absent (#131), so the `*_file` is read
// and trimmed. An empty file is an error naming it, never a silent empty credential.
import { readFileSync } from "node:fs";
import { ConfigError } from "../errors.ts";

export function resolveSecret(
  inline: string | null | undefined,
  file: string | null | undefined,
  what: string,
  read: (path: string) => string = (path) => readFileSync(path, "utf8"),
): string | undefined {
  if (inline !== null && inline !== undefined && inline.trim() !== "") return inline;
  if (file === null || file === undefined || file.trim() === "") return undefined;
  let text: string;
  try {
    text = read(file);
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    if (e.code === "EACCES" || e.code === "EPERM") {
      throw new ConfigError(
        `cannot read ${what} from ${file}: permission denied; make it readable by the user sf2loki runs as ` +
          `(the container runs as uid 10001: e.g. chmod 640 with a group that user is in; a root-owned 0600 file crash-loops the container)`,
      );
    }
    throw new ConfigError(`cannot read ${what} from ${file}: ${e.code ?? e.message}`);
  }
  const value = text.trim();
  if (value === "")
    throw new ConfigError(`${what} file ${file} is empty; put the secret in it or unset the *_file key`);
  return value;
}

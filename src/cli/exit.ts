// Exit codes live here and nowhere else (docs/cli.md documents them).
import { ConfigError, Sf2LokiError, describeError } from "../errors.ts";
import { withoutUserinfoIn } from "../util/userinfo.ts";

export const EXIT_OK = 0;
/** Operational failure: a state error, a doctor FAIL, a crashed daemon. */
export const EXIT_FAILURE = 1;
/** Config, wiring or usage error. */
export const EXIT_CONFIG = 2;

/** What a command writes to; tests capture it, main.ts binds it to the process. */
export interface CliIO {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: Record<string, string | undefined>;
  isTTY: boolean;
  /** The terminal's width when stderr is one (a live status line must never wrap). */
  columns?: () => number | undefined;
}

/** Known errors become one line and their exit code; anything else is a crash and keeps its stack. */
export function reportError(err: unknown, io: CliIO): number {
  if (err instanceof ConfigError) {
    io.stderr(`sf2loki: ${withoutUserinfoIn(err.message)}\n`);
    return EXIT_CONFIG;
  }
  if (err instanceof Sf2LokiError) {
    io.stderr(`sf2loki: ${withoutUserinfoIn(err.message)}\n`);
    return EXIT_FAILURE;
  }
  io.stderr(
    `sf2loki: unexpected error: ${withoutUserinfoIn(err instanceof Error ? (err.stack ?? err.message) : describeError(err))}\n`,
  );
  return EXIT_FAILURE;
}

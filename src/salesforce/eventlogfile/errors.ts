// EventLogFile failures that are not plain REST errors: a CSV that cannot be parsed.
import { Sf2LokiError } from "../../errors.ts";

/** The body is not the CSV it should be (unbalanced quote, a field over 1 MiB); names the line. */
export class EventLogFileCsvError extends Sf2LokiError {
  readonly line: number | undefined;
  constructor(where: string, line: number | undefined, detail: string, cause?: unknown) {
    super(
      "SF2LOKI_ELF_CSV",
      `EventLogFile ${where} is not valid CSV${line === undefined ? "" : ` at line ${line}`}: ${detail}; the file is retried next cycle and abandoned once older than download_max_age`,
      cause === undefined ? undefined : { cause },
    );
    this.line = line;
  }
}

// The dead-letter store's errors, each with a stable code and one line an operator can act on.
import { Sf2LokiError } from "../errors.ts";

/** The store could not be read or written; the message names where and what to check. */
export class DeadLetterStoreError extends Sf2LokiError {
  constructor(message: string, options?: { cause?: unknown }) {
    super("SF2LOKI_DEADLETTER_STORE", message, options);
  }
}

/** A CLI request that names nothing the store holds (`show <id>` of an unknown id). */
export class DeadLetterNotFoundError extends Sf2LokiError {
  constructor(message: string) {
    super("SF2LOKI_DEADLETTER_NOT_FOUND", message);
  }
}

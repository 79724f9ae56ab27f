// Errors of the coordination layer. Codes are stable; messages are one line an operator can act on.
import { Sf2LokiError } from "../errors.ts";
import { StateFenceError } from "../state/errors.ts";

// The fence error belongs to the state seam (a commit is what it refuses); coordinators raise it.
export { StateFenceError };

/** The fence message of spec §2.1; `why` says how leadership was lost. */
export function leadershipFenceError(
  identity: string,
  where: string,
  why = "leadership lost",
): StateFenceError {
  return new StateFenceError(
    `refusing checkpoint commit; ${identity} does not hold the lease ${where} (${why}); ` +
      `the new leader owns the checkpoints now`,
  );
}

/**
 * The lease exists but cannot be read (permissions, a stale NFS handle, an API error). It means
 * "cannot tell", never "absent": a replica never contests a lease it cannot read (#50).
 */
export class LeaseUnreadableError extends Sf2LokiError {
  constructor(where: string, detail: string, options?: { cause?: unknown }) {
    super(
      "SF2LOKI_LEASE_UNREADABLE",
      `cannot read the lease ${where}: ${detail}; standing by without contesting it until it reads again`,
      options,
    );
  }
}

/** One lease call took longer than its bound; the caller counts it as a failed attempt. */
export class LeaseTimeoutError extends Sf2LokiError {
  constructor(what: string, ms: number) {
    super("SF2LOKI_LEASE_TIMEOUT", `${what} did not answer within ${ms} ms; counting it as failed`);
  }
}

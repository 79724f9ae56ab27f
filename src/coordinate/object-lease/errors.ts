// Failures of the object lease, as one line an operator can act on. A read failure is the shared
// LeaseUnreadableError ("cannot tell", never "absent"); a write whose outcome is unknown is this one.
import { Sf2LokiError, describeError } from "../../errors.ts";
import type { ErrorClass } from "../../state/object-backend.ts";
import type { ObjectStoreHints } from "../../state/errors.ts";

export class LeaseWriteError extends Sf2LokiError {
  constructor(what: string, hints: ObjectStoreHints, verdict: ErrorClass, cause: unknown) {
    super(
      "SF2LOKI_LEASE_WRITE_FAILED",
      `${what} of the lease ${hints.location} failed (${objectErrorDetail(hints, verdict, cause)}); ` +
        `retrying on the renew interval, and a leader that cannot renew fences itself before its ttl ends`,
      { cause },
    );
  }
}

/** The error itself, plus what to grant when the store refused our credentials. */
export function objectErrorDetail(hints: ObjectStoreHints, verdict: ErrorClass, err: unknown): string {
  const detail = describeError(err);
  if (verdict !== "access-denied") return detail;
  const scope = hints.scope ?? "bucket";
  return `access denied: ${detail}; grant the sf2loki identity ${hints.permissions} on that ${scope}`;
}

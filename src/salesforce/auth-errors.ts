// The one error family every Salesforce credential failure reaches callers as (spec A §1.4).
import { Sf2LokiError } from "../errors.ts";

/** A token mint, userinfo call or local signing step failed; the message says what to check. */
export class AuthError extends Sf2LokiError {
  /** HTTP status when Salesforce answered, undefined for transport or local failures. */
  readonly status: number | undefined;
  constructor(message: string, options?: { cause?: unknown; status?: number }) {
    super("SF2LOKI_AUTH", message, options);
    this.status = options?.status;
  }
}

/** `org 'x': ` in multi-org mode, nothing for the single (unnamed) org. */
export function orgPrefix(orgName: string): string {
  return orgName === "" ? "" : `org '${orgName}': `;
}

// The one error family of the Salesforce REST side. Callers branch on the class (or `code`), never
// on the wording: throttled aborts a cycle, transient is retried, everything else is contained.
import { Sf2LokiError, describeError } from "../errors.ts";
import { unreachable } from "../util/proxy-fault.ts";

export class SalesforceApiError extends Sf2LokiError {
  /** HTTP status, when a response was received. */
  readonly status: number | undefined;
  /** Salesforce's `errorCode` from the error body (`MALFORMED_QUERY`, ...), when it sent one. */
  readonly sfErrorCode: string | undefined;
  /** Worth retrying within the same call (transport failure, 429, 5xx). */
  readonly transient: boolean;

  constructor(
    code: string,
    message: string,
    opts: { status?: number; sfErrorCode?: string; transient?: boolean; cause?: unknown } = {},
  ) {
    super(code, message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.status = opts.status;
    this.sfErrorCode = opts.sfErrorCode;
    this.transient = opts.transient ?? false;
  }
}

/** 403 REQUEST_LIMIT_EXCEEDED: the org's API budget is spent; the caller ends its cycle at once. */
export class SalesforceThrottledError extends SalesforceApiError {
  constructor(where: string) {
    super(
      "SF2LOKI_SF_THROTTLED",
      `Salesforce refused ${where}: REQUEST_LIMIT_EXCEEDED (org API budget spent); polling backs off until the next cycle, check the org's API usage`,
      { status: 403, sfErrorCode: "REQUEST_LIMIT_EXCEEDED" },
    );
  }
}

/** The query text was refused (MALFORMED_QUERY, INVALID_FIELD, ...): retrying the same text is useless. */
export class SalesforceQueryError extends SalesforceApiError {
  constructor(where: string, status: number, sfErrorCode: string, detail: string) {
    super(
      "SF2LOKI_SF_QUERY",
      `Salesforce rejected the query for ${where}: ${sfErrorCode}: ${detail}; check the object and field names in the config`,
      { status, sfErrorCode },
    );
  }
}

/** 401 even after one fresh token: the credentials or the connected app are wrong. */
export class SalesforceSessionError extends SalesforceApiError {
  constructor(where: string) {
    super(
      "SF2LOKI_SF_SESSION",
      `Salesforce rejected a freshly minted token for ${where} (INVALID_SESSION_ID); check the connected app's OAuth policies and the user's API permission`,
      { status: 401, sfErrorCode: "INVALID_SESSION_ID" },
    );
  }
}

/** A 2xx whose body is not the JSON object expected (an HTML proxy page, a truncated body) (#94). */
export class SalesforceBadResponseError extends SalesforceApiError {
  constructor(where: string, status: number, body: string) {
    super(
      "SF2LOKI_SF_BAD_RESPONSE",
      `Salesforce answered ${where} with HTTP ${status} but not a JSON object (${quote(body)}); check for a proxy in front of the instance URL`,
      { status, transient: false },
    );
  }
}

/** Any other non-2xx status. 429 and 5xx are transient. */
export class SalesforceHttpError extends SalesforceApiError {
  constructor(where: string, status: number, sfErrorCode: string | undefined, body: string) {
    super("SF2LOKI_SF_HTTP", `Salesforce answered ${where} with HTTP ${status}: ${quote(body)}`, {
      status,
      ...(sfErrorCode === undefined ? {} : { sfErrorCode }),
      transient: status === 429 || status >= 500,
    });
  }
}

/** No usable response: connection refused or reset, timeout, a body cut short. Transient. */
export class SalesforceTransportError extends SalesforceApiError {
  /** `target`: the instance URL the request was for, when known (names a proxy that failed). */
  constructor(where: string, cause: unknown, target?: string) {
    const { text, hint } = target
      ? unreachable(cause, target)
      : { text: describeError(cause), hint: "check network access to the instance" };
    super("SF2LOKI_SF_TRANSPORT", `could not reach Salesforce for ${where}: ${text}; retried, ${hint}`, {
      transient: true,
      cause,
    });
  }
}

export function isThrottled(err: unknown): err is SalesforceThrottledError {
  return err instanceof SalesforceThrottledError;
}

export function isTransient(err: unknown): boolean {
  return err instanceof SalesforceApiError && err.transient;
}

/** At most 200 characters of a body, on one line, for an operator message. */
export function quote(body: string): string {
  const flat = body.replace(/\s+/g, " ").trim();
  return flat.length > 200 ? `${flat.slice(0, 200)}…` : flat || "<empty body>";
}

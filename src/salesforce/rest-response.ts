// Turning a Salesforce HTTP response into a value or a typed error. Pure: no I/O beyond reading the
// body that was handed in, so every branch is cheap to pin in a test.
import {
  SalesforceBadResponseError,
  SalesforceHttpError,
  SalesforceQueryError,
  SalesforceThrottledError,
  type SalesforceApiError,
} from "./rest-errors.ts";

/** Salesforce's error body: `[{"message": "...", "errorCode": "..."}]` (sometimes a bare object). */
export function sfErrorOf(body: string): { errorCode?: string; message?: string } {
  try {
    const parsed: unknown = JSON.parse(body);
    const first: unknown = Array.isArray(parsed) ? parsed[0] : parsed;
    if (first && typeof first === "object") {
      const { errorCode, message } = first as Record<string, unknown>;
      return {
        ...(typeof errorCode === "string" ? { errorCode } : {}),
        ...(typeof message === "string" ? { message } : {}),
      };
    }
  } catch {
    // not JSON: fall through to the raw body
  }
  return {};
}

/** The error for a non-2xx response other than the 401 the client re-mints on. */
export function errorForStatus(where: string, status: number, body: string): SalesforceApiError {
  const { errorCode, message } = sfErrorOf(body);
  if (status === 403 && (errorCode === "REQUEST_LIMIT_EXCEEDED" || body.includes("REQUEST_LIMIT_EXCEEDED"))) {
    return new SalesforceThrottledError(where);
  }
  if (status === 400 && errorCode !== undefined) {
    return new SalesforceQueryError(where, status, errorCode, (message ?? "").replace(/\s+/g, " "));
  }
  return new SalesforceHttpError(where, status, errorCode, body);
}

/** A 2xx body that must be a JSON object; anything else is a typed error, never a crash (#94). */
export function jsonObjectOf(
  where: string,
  status: number,
  body: string,
  parse: (text: string) => unknown = JSON.parse,
): Record<string, unknown> {
  let parsed: unknown;
  try {
    parsed = parse(body);
  } catch {
    throw new SalesforceBadResponseError(where, status, body);
  }
  if (parsed === null || typeof parsed !== "object" || Array.isArray(parsed)) {
    throw new SalesforceBadResponseError(where, status, body);
  }
  return parsed as Record<string, unknown>;
}

/** One page of a query response: its records, and the path of the next page if there is one. */
export function queryPageOf(
  where: string,
  status: number,
  body: string,
  parse?: (text: string) => unknown,
): { records: Record<string, unknown>[]; next: string | undefined } {
  const page = jsonObjectOf(where, status, body, parse);
  const records = page.records;
  if (
    !Array.isArray(records) ||
    records.some((r) => r === null || typeof r !== "object" || Array.isArray(r))
  ) {
    throw new SalesforceBadResponseError(where, status, body);
  }
  const nextUrl = page.nextRecordsUrl;
  const next =
    page.done !== true && typeof nextUrl === "string" && nextUrl.startsWith("/services/data/")
      ? nextUrl
      : undefined;
  return { records: records as Record<string, unknown>[], next };
}

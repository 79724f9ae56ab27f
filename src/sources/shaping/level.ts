// The `level` structured-metadata value, from an explicit allowlist of payload fields (spec B §5.2).
import { pyStr } from "../../egress/transforms-python.ts";

export type Level = "error" | "warn" | "info";

const ABSENT = new Set(["", "0", "none", "null", "na", "n/a"]);
const SUCCESS = new Set(["s", "success", "successful", "ok", "complete", "completed", "true"]);
const ERROR_FIELDS = ["EXCEPTION_MESSAGE", "EXCEPTION_TYPE", "ERROR_MESSAGE", "ERROR_CODE"];

/** Reads one field of whatever holds the payload (a record, or a CSV row's cells). */
export type FieldGetter = (field: string) => unknown;

/** The value as text when it is meaningfully present, else undefined. */
function present(get: FieldGetter, field: string): string | undefined {
  const v = get(field);
  if (v === null || v === undefined) return undefined;
  const s = pyStr(v).trim();
  return ABSENT.has(s.toLowerCase()) ? undefined : s;
}

export function deriveLevel(payload: Record<string, unknown>): Level {
  return deriveLevelBy((field) => payload[field]);
}

export function deriveLevelBy(payload: FieldGetter): Level {
  for (const f of ERROR_FIELDS) if (present(payload, f) !== undefined) return "error";
  const status = present(payload, "STATUS_CODE");
  if (status !== undefined && /^\d+$/.test(status)) {
    const code = Number(status);
    if (code >= 500) return "error";
    if (code >= 400) return "warn";
    if (code >= 100) return "info";
  }
  const request = present(payload, "REQUEST_STATUS");
  if (request !== undefined) return SUCCESS.has(request.toLowerCase()) ? "info" : "warn";
  const login = present(payload, "LOGIN_STATUS");
  if (login !== undefined) return login.toUpperCase() === "LOGIN_NO_ERROR" ? "info" : "warn";
  for (const f of ["OPERATION_STATUS", "Status"]) {
    const s = present(payload, f);
    if (s !== undefined) return SUCCESS.has(s.toLowerCase()) ? "info" : "warn";
  }
  return "info";
}

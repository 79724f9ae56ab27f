// Authentication and tenant headers, computed once at construction (spec B §4.2): the same rules for
// the Loki push and the OTLP export (Loki's OTLP endpoint takes the tenant the same way).
import { ConfigError } from "../../errors.ts";

/** The auth keys of `sink.loki` and `sink.otlp`. */
export interface AuthSettings {
  tenant_id?: string | null;
  /** Already-resolved secret (inline or `auth_token_file`). Blank counts as absent. */
  auth_token?: string | null;
  auth?: "basic" | "bearer";
}

/** A blank or whitespace-only secret counts as absent (upstream #131). */
function present(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && value.trim() !== "" ? value : undefined;
}

/**
 * basic (default): token → `Authorization: Basic base64(<tenant or "">:<token>)`, no X-Scope-OrgID
 * (Grafana Cloud derives the tenant from the user). bearer: token → `Authorization: Bearer`, and the
 * tenant, which has no other place to go, as X-Scope-OrgID. No token: tenant → X-Scope-OrgID.
 */
export function authHeaders(settings: AuthSettings, key = "sink.loki"): Record<string, string> {
  const tenant = present(settings.tenant_id);
  const token = present(settings.auth_token);
  const mode = settings.auth ?? "basic";
  if (mode === "bearer") {
    if (!token) {
      throw new ConfigError(
        `${key}.auth is bearer but no auth_token is set; set ${key}.auth_token(_file) or use auth: basic.`,
      );
    }
    return tenant
      ? { authorization: `Bearer ${token}`, "x-scope-orgid": tenant }
      : { authorization: `Bearer ${token}` };
  }
  if (token) {
    return { authorization: `Basic ${Buffer.from(`${tenant ?? ""}:${token}`, "utf8").toString("base64")}` };
  }
  return tenant ? { "x-scope-orgid": tenant } : {};
}

// `auth`: mint a token with the daemon's TokenProvider and resolve the org id, exactly as the daemon's
// startup probe does. The AuthError messages already name the key or the org setting to fix.
import { describeError } from "../../errors.ts";
import type { OrgUnderCheck } from "../check.ts";
import { fail, pass, type CheckRow } from "../check.ts";

export async function checkAuth(org: OrgUnderCheck, signal: AbortSignal): Promise<CheckRow> {
  const settings = org.wiring.org.salesforce;
  try {
    const token = await org.wiring.auth.token(signal);
    const orgId = await org.wiring.auth.orgId(signal);
    return pass("auth", `flow=${settings.auth_mode} instance_url=${token.instanceUrl} org_id=${orgId}`);
  } catch (err) {
    return fail("auth", `${describeError(err)}${authHint(settings.auth_mode, settings.login_url, err)}`);
  }
}

/** The two mistakes operators make most (spec C §3.6): the generic host, and an unauthorised JWT user. */
function authHint(mode: string, loginUrl: string, err: unknown): string {
  const text = describeError(err);
  if (mode === "client_credentials" && /\/\/(login|test)\.salesforce\.com/.test(loginUrl)) {
    return " (hint: client_credentials needs your My Domain URL as salesforce.login_url)";
  }
  if (mode === "jwt_bearer" && text.includes("invalid_grant") && !text.includes("pre-authorized")) {
    return " (hint: user not pre-authorised on the connected app's Policies tab, or the certificate does not match salesforce.private_key)";
  }
  return "";
}

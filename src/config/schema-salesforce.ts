// `salesforce:` — one org's identity and credentials (spec A §1, §15; spec C §4.7).
import { z } from "zod";
import { bool, duration, meta, oneOf, optStr, secret, secretFile, section, str } from "./fields.ts";
import { tlsSection } from "./schema-tls.ts";

export const GENERIC_LOGIN_HOSTS = ["https://login.salesforce.com", "https://test.salesforce.com"];

const limits = section(
  z.strictObject({
    enabled: bool(false, "Poll the org's REST limits endpoint and export the figures as gauges."),
    poll_interval: duration("5m", "How often the limits endpoint is polled."),
  }),
  "Org limits poller.",
);

export const salesforceSchema = z
  .strictObject({
    login_url: str(
      "",
      "OAuth login host. Empty derives it from `environment` (https://login.salesforce.com or https://test.salesforce.com); client_credentials needs your My Domain URL.",
      ["https://acme.my.salesforce.com"],
    ),
    environment: oneOf(
      ["production", "sandbox"],
      "production",
      "Org environment; also the `environment` label.",
    ),
    auth_mode: oneOf(
      ["jwt_bearer", "client_credentials"],
      "jwt_bearer",
      "OAuth flow: JWT bearer (connected app certificate) or client credentials.",
    ),
    client_id: meta(z.string().min(1, "must not be empty"), {
      description: "Connected app consumer key.",
      examples: ["${SF_CLIENT_ID}"],
    }),
    client_secret: secret("Connected app consumer secret (client_credentials). Prefer client_secret_file."),
    client_secret_file: secretFile(
      "File holding the consumer secret; read when client_secret is unset or blank.",
      ["/etc/sf2loki/secrets/client-secret"],
    ),
    username: str("", "Integration user's username: the JWT `sub` (required for jwt_bearer).", [
      "integration@example.com",
    ]),
    private_key_file: secretFile("PEM private key file for jwt_bearer.", [
      "/etc/sf2loki/secrets/private-key",
    ]),
    private_key: secret("Inline PEM private key for jwt_bearer. Prefer private_key_file."),
    api_version: str("60.0", "Salesforce REST/SOQL API version."),
    org_id: optStr("18-character org id. Null resolves it once via userinfo (needs the `openid` scope)."),
    token_ttl: duration(
      "1h",
      "Assumed access-token lifetime (Salesforce does not report it); must exceed the 60s refresh skew by at least a minute.",
    ),
    limits,
    tls: tlsSection("Salesforce", "the login host and the instance: OAuth, REST, EventLogFile downloads"),
  })
  .superRefine((sf, ctx) => {
    if (sf.auth_mode === "jwt_bearer" && sf.username === "") {
      ctx.addIssue({
        code: "custom",
        path: ["username"],
        message: "salesforce.username is required when auth_mode is 'jwt_bearer'",
      });
    }
    if (
      sf.auth_mode === "client_credentials" &&
      GENERIC_LOGIN_HOSTS.includes(sf.login_url.replace(/\/+$/, ""))
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["login_url"],
        message:
          "client_credentials cannot use the generic login host; set login_url to your My Domain URL (https://<domain>.my.salesforce.com)",
      });
    }
    if (sf.token_ttl < 120_000) {
      ctx.addIssue({
        code: "custom",
        path: ["token_ttl"],
        message:
          "must be at least 2m (tokens are refreshed 60s before expiry; a shorter ttl mints on every call)",
      });
    }
  })
  .transform((sf) => ({
    ...sf,
    login_url:
      sf.login_url !== ""
        ? sf.login_url.replace(/\/+$/, "")
        : sf.environment === "sandbox"
          ? "https://test.salesforce.com"
          : "https://login.salesforce.com",
  }));

export const salesforceField = meta(salesforceSchema.nullable().default(null), {
  description: "Single-org Salesforce connection. Mutually exclusive with `orgs`.",
});

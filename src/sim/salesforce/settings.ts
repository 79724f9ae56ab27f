// `salesforce:` settings that point at a running simulated org, for tests, the bench and the demo.
import type { SalesforceSettings } from "../../salesforce/auth.ts";
import type { SimOrg } from "./sim-org.ts";

/** Client-credentials settings for `sim`, whose `clientSecret` option must equal `clientSecret`. */
export function simSalesforceSettings(
  sim: SimOrg,
  clientSecret: string,
  over: Partial<SalesforceSettings> = {},
): SalesforceSettings {
  return {
    login_url: sim.loginUrl,
    environment: "production",
    auth_mode: "client_credentials",
    client_id: sim.clientId,
    client_secret: clientSecret,
    username: "",
    private_key: null,
    api_version: "60.0",
    org_id: null,
    token_ttl: 3_600_000,
    ...over,
  };
}

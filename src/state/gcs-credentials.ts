// A `service_file` (`state.gcs.service_file`, `coordinate.gcs_lease.service_file`) is checked before the
// GCS library ever sees it: only a plain service-account key is accepted. The library would also load
// "external account" configurations, which can make it run commands or fetch URLs named in the file;
// that is the risk its keyFilename deprecation warns of.
import { readFileSync } from "node:fs";
import { ConfigError } from "../errors.ts";

/** `configKey` names the setting in the error, e.g. `state.gcs.service_file`. */
export function checkServiceAccountFile(path: string, configKey: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw invalid(
      configKey,
      path,
      `cannot be read as JSON (${err instanceof Error ? err.message : String(err)})`,
    );
  }
  const key = parsed as { type?: unknown; client_email?: unknown; private_key?: unknown } | null;
  if (key?.type !== "service_account") {
    throw invalid(
      configKey,
      path,
      `is not a service-account key (type ${JSON.stringify(key?.type ?? null)})`,
    );
  }
  if (typeof key.client_email !== "string" || typeof key.private_key !== "string") {
    throw invalid(configKey, path, "lacks client_email or private_key");
  }
}

function invalid(configKey: string, path: string, problem: string): ConfigError {
  return new ConfigError(
    `${configKey} ${path} ${problem}; point it at a service-account JSON key, or leave it empty ` +
      `to use Application Default Credentials`,
  );
}

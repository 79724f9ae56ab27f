// `state.gcs.service_file` is checked before the GCS library ever sees it: only a plain service-account
// key is accepted. The library would also load "external account" configurations, which can make it
// run commands or fetch URLs named in the file; that is the risk its keyFilename deprecation warns of.
import { readFileSync } from "node:fs";
import { ConfigError } from "../errors.ts";

export function checkServiceAccountFile(path: string): void {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw invalid(path, `cannot be read as JSON (${err instanceof Error ? err.message : String(err)})`);
  }
  const key = parsed as { type?: unknown; client_email?: unknown; private_key?: unknown } | null;
  if (key?.type !== "service_account") {
    throw invalid(path, `is not a service-account key (type ${JSON.stringify(key?.type ?? null)})`);
  }
  if (typeof key.client_email !== "string" || typeof key.private_key !== "string") {
    throw invalid(path, "lacks client_email or private_key");
  }
}

function invalid(path: string, problem: string): ConfigError {
  return new ConfigError(
    `state.gcs.service_file ${path} ${problem}; point it at a service-account JSON key, or leave it empty ` +
      `to use Application Default Credentials`,
  );
}

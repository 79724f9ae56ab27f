// Config load pipeline (spec C §4.1): read → YAML → ${VAR} → env overrides → schema → secrets.
// No network access, so `--check` and the daemon validate exactly the same way.
import { pubsubActive } from "../sources/pubsub/settings.ts";
import { readFile } from "node:fs/promises";
import { parseDocument } from "yaml";
import type { z } from "zod";
import { ConfigError } from "../errors.ts";
import { deepMerge, envOverrides } from "./env.ts";
import { interpolate } from "./interpolate.ts";
import {
  configSchema,
  type Config,
  type OrgConfig,
  type SalesforceConfig,
  type SourcesConfig,
} from "./schema.ts";
import { resolveSecret } from "./secrets.ts";
import { readProxyEnv } from "../util/proxy-env.ts";
import { grpcRoute } from "../util/grpc-route.ts";
import { resolvedOrgs } from "./orgs.ts";

interface AzureSecret {
  credential: string;
  connection_string: string | null;
  connection_string_file: string | null;
}

const UNKNOWN_KEY =
  "unknown configuration key (check for typos; see docs/config-reference.md for valid keys)";

export async function loadConfig(
  path?: string,
  env: Record<string, string | undefined> = process.env,
): Promise<Config> {
  const fileTree = path === undefined ? {} : await readYaml(path);
  const interpolated = interpolate(fileTree, env);
  const rootKeys = new Set(Object.keys(configSchema.shape));
  const merged = deepMerge(interpolated, envOverrides(env, rootKeys));
  // The proxy variables are settings of this process too: a malformed one fails every command that
  // loads a config (and `--check`) with exit 2, before any client is built.
  const proxy = readProxyEnv(env);
  const config = validateConfig(merged);
  // An https:// proxy Pub/Sub would have to cross is refused here, at start, not met at first connect.
  for (const org of resolvedOrgs(config)) {
    const s = org.sources.pubsub;
    if (pubsubActive(s)) grpcRoute(s.endpoint, s.insecure, proxy);
  }
  return config;
}

/** Validates an already-built tree (no file, no env) and resolves its secrets. */
export function validateConfig(tree: unknown): Config {
  const result = configSchema.safeParse(tree);
  if (!result.success) throw new ConfigError(`invalid configuration:\n${formatIssues(result.error.issues)}`);
  return resolveSecrets(result.data);
}

async function readYaml(path: string): Promise<unknown> {
  let text: string;
  try {
    text = await readFile(path, "utf8");
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new ConfigError(
      `cannot read config file ${path}: ${e.code === "ENOENT" ? "no such file" : e.message}`,
    );
  }
  const doc = parseDocument(text, { uniqueKeys: true });
  const first = doc.errors[0];
  if (first) {
    const pos = first.linePos?.[0];
    const where = pos ? `line ${pos.line}, column ${pos.col}` : "unknown position";
    const what = first.message.split("\n")[0]!.replace(/ at line \d+, column \d+:?$/, "");
    throw new ConfigError(`cannot parse config file ${path} (${where}): ${what}`);
  }
  const tree: unknown = doc.toJS();
  if (tree === null || tree === undefined) return {};
  if (typeof tree !== "object" || Array.isArray(tree)) {
    throw new ConfigError(`config file ${path} must be a YAML mapping`);
  }
  return tree;
}

export function formatIssues(issues: readonly z.core.$ZodIssue[]): string {
  const lines: string[] = [];
  for (const issue of issues) {
    const base = issue.path.map(String);
    if (issue.code === "unrecognized_keys") {
      for (const key of issue.keys) lines.push(`  ${[...base, key].join(".")}: ${UNKNOWN_KEY}`);
      continue;
    }
    const where = base.length > 0 ? base.join(".") : "<root>";
    const missing = issue.code === "invalid_type" && issue.message.endsWith("received undefined");
    lines.push(`  ${where}: ${missing ? "required" : issue.message}`);
  }
  return lines.join("\n");
}

function resolveSecrets(config: Config): Config {
  const orgs = config.orgs.map((org) => {
    const prefix = `org '${org.name}': `;
    return {
      ...org,
      salesforce: resolveSalesforce(org.salesforce, prefix),
      sources: resolveSources(org.sources, prefix),
      sink: resolveOrgSink(org.sink, prefix, config.sink.type),
    };
  });
  const loki = config.sink.loki;
  const lokiToken = resolveSecret(loki.auth_token, loki.auth_token_file, "sink.loki.auth_token");
  // Each sink's secret file is read only when that sink is the one used: a leftover block never fails a start.
  const otlp = config.sink.otlp;
  const otlpToken =
    config.sink.type === "otlp"
      ? resolveSecret(otlp.auth_token, otlp.auth_token_file, "sink.otlp.auth_token")
      : otlp.auth_token;
  const resolved: Config = {
    ...config,
    salesforce: config.salesforce ? resolveSalesforce(config.salesforce, "") : null,
    sources: resolveSources(config.sources, ""),
    orgs,
    sink: {
      ...config.sink,
      loki: { ...loki, auth_token: lokiToken ?? null },
      otlp: { ...otlp, auth_token: otlpToken ?? null },
    },
    state: {
      ...config.state,
      azure: resolveAzure(config.state.azure, "state.azure", config.state.store === "azure"),
    },
    coordinate: {
      ...config.coordinate,
      azure_lease: resolveAzure(
        config.coordinate.azure_lease,
        "coordinate.azure_lease",
        config.coordinate.type === "azure_lease",
      ),
    },
  };
  resolved.service = resolveTelemetry(resolved);
  return resolved;
}

function resolveOrgSink(
  sink: OrgConfig["sink"],
  prefix: string,
  type: Config["sink"]["type"],
): OrgConfig["sink"] {
  const { loki, otlp } = sink;
  try {
    const lokiToken = resolveSecret(loki.auth_token, loki.auth_token_file, "orgs[].sink.loki.auth_token");
    const otlpToken =
      type === "otlp"
        ? resolveSecret(otlp.auth_token, otlp.auth_token_file, "orgs[].sink.otlp.auth_token")
        : otlp.auth_token;
    return {
      ...sink,
      loki: { ...loki, auth_token: lokiToken ?? null },
      otlp: { ...otlp, auth_token: otlpToken ?? null },
    };
  } catch (err) {
    if (err instanceof ConfigError) throw new ConfigError(prefix + err.message);
    throw err;
  }
}

function resolveSalesforce(sf: SalesforceConfig, prefix: string): SalesforceConfig {
  const wrap = <T>(fn: () => T): T => {
    try {
      return fn();
    } catch (err) {
      if (err instanceof ConfigError && prefix) throw new ConfigError(prefix + err.message);
      throw err;
    }
  };
  // Only the credential the auth mode uses is read: switching modes must not trip over a stale file.
  const clientSecret =
    sf.auth_mode === "client_credentials"
      ? wrap(() => resolveSecret(sf.client_secret, sf.client_secret_file, "salesforce client secret"))
      : undefined;
  const privateKey =
    sf.auth_mode === "jwt_bearer"
      ? wrap(() => resolveSecret(sf.private_key, sf.private_key_file, "salesforce private key"))
      : undefined;
  if (sf.auth_mode === "client_credentials" && clientSecret === undefined) {
    throw new ConfigError(
      `${prefix}salesforce client secret required for auth_mode=client_credentials (set client_secret or client_secret_file)`,
    );
  }
  if (sf.auth_mode === "jwt_bearer" && privateKey === undefined) {
    throw new ConfigError(
      `${prefix}salesforce private key required for auth_mode=jwt_bearer (set private_key_file or private_key)`,
    );
  }
  return { ...sf, client_secret: clientSecret ?? null, private_key: privateKey ?? null };
}

/**
 * The connection string is read only where it is used (the block is the configured backend and its
 * credential is connection_string), so switching backends never trips over a stale file. A missing one
 * is reported where the client is built, for every caller alike.
 */
function resolveAzure<T extends AzureSecret>(azure: T, section: string, inUse: boolean): T {
  if (!inUse || azure.credential !== "connection_string") return { ...azure, connection_string: null };
  const value = resolveSecret(
    azure.connection_string,
    azure.connection_string_file,
    `${section}.connection_string`,
  );
  return { ...azure, connection_string: value ?? null };
}

function usesHash(sources: SourcesConfig): boolean {
  const rules = [
    ...sources.pubsub.transforms,
    ...sources.eventlog_objects.transforms,
    ...sources.eventlogfile.transforms,
    ...sources.apexlog.transforms,
  ];
  return rules.some((r) => r.action === "hash");
}

function resolveSources(sources: SourcesConfig, prefix: string): SourcesConfig {
  // The salt is read only where a hash rule needs it.
  if (!usesHash(sources)) return { ...sources, transform_salt: null };
  let salt: string | undefined;
  try {
    salt = resolveSecret(sources.transform_salt, sources.transform_salt_file, "sources.transform_salt");
  } catch (err) {
    if (err instanceof ConfigError && prefix) throw new ConfigError(prefix + err.message);
    throw err;
  }
  return { ...sources, transform_salt: salt ?? null };
}

function resolveTelemetry(config: Config): Config["service"] {
  const t = config.service.telemetry;
  if (!t.enabled) return { ...config.service, telemetry: { ...t, basic_auth_token: null } };
  const token =
    resolveSecret(t.basic_auth_token, t.basic_auth_token_file, "service.telemetry.basic_auth_token") ?? null;
  const resolved = { ...config.service, telemetry: { ...t, basic_auth_token: token } };
  if (t.endpoint.trim() === "") {
    throw new ConfigError("service.telemetry.enabled is true but service.telemetry.endpoint is empty");
  }
  if (t.auth === "basic") {
    const user = t.basic_auth_user.trim() || (config.sink.loki.tenant_id ?? "").trim();
    const pass = token ?? config.sink.loki.auth_token ?? "";
    if (user === "" || pass.trim() === "") {
      throw new ConfigError(
        "service.telemetry.auth is 'basic' but no credentials resolve: set service.telemetry.basic_auth_user and " +
          "basic_auth_token(_file), or rely on sink.loki.tenant_id and sink.loki.auth_token, or set service.telemetry.auth: none",
      );
    }
  }
  return resolved;
}

// Where each org's lines go (#123): the top-level `sink.loki` destination, or an org's own one from
// `orgs[].sink.loki` (`sink.otlp` and `orgs[].sink.otlp` under sink.type otlp, #28). A destination is a
// push URL plus the tenant and credentials sent to it; orgs
// that resolve to the same ones share it (one connection pool, one egress governor, one daily budget).
// Pure and offline: `--check` and the daemon resolve the same list.
import { BUDGET_KEY } from "../egress/budget.ts";
import { ConfigError } from "../errors.ts";
import type { Config } from "./schema.ts";

type LokiConfig = Config["sink"]["loki"];
type OtlpConfig = Config["sink"]["otlp"];
export type EgressConfig = LokiConfig["egress"];

export interface LokiDestination {
  /** "" for the top-level `sink.loki`; otherwise the first org (in config order) that sends to it. */
  name: string;
  /** The orgs whose entries go here, in config order ("" is the single org of a single-org config). */
  orgs: string[];
  /** The complete `sink.loki` this destination's sink is built from (labels, batch, encoding shared). */
  loki: LokiConfig;
  /** With `sink.type: otlp`: the complete `sink.otlp` its OTLP sink is built from (pipeline settings: `loki`). */
  otlp: OtlpConfig;
  /** Where its settings are, for operator messages: `sink.loki`, or `orgs[<org>].sink.loki` (`…otlp`). */
  where: string;
  /** Checkpoint key of its daily budget counter: `egress:budget` (the Python key) for the top-level one. */
  budgetKey: string;
}

/** A blank value counts as unset, like a blank secret (#131). */
function set(value: string | null | undefined): string | undefined {
  return value !== null && value !== undefined && value.trim() !== "" ? value : undefined;
}

/** Same URL, same tenant, same credentials (and headers, for OTLP): one destination. */
function identity(type: Config["sink"]["type"], loki: LokiConfig, otlp: OtlpConfig): string {
  if (type === "otlp") {
    return JSON.stringify([
      otlp.url,
      set(otlp.tenant_id) ?? "",
      otlp.auth,
      set(otlp.auth_token) ?? "",
      Object.entries(otlp.headers).sort(),
    ]);
  }
  return JSON.stringify([loki.url, set(loki.tenant_id) ?? "", loki.auth, set(loki.auth_token) ?? ""]);
}

/** The keys an org's destination override may set, in `orgs[].sink.loki` and `orgs[].sink.otlp` alike. */
interface Endpoint {
  url: string | null;
  tenant_id: string | null;
  auth: "basic" | "bearer";
  auth_token: string | null;
  auth_token_file: string | null;
}

type EndpointOverride = { [K in keyof Endpoint]: Endpoint[K] | null };

/**
 * One org's endpoint, overrides applied. An org with its own `url` inherits no tenant, auth mode or
 * token (nor what `forget` adds): credentials meant for one receiver are never sent to another
 * because a key was left out.
 */
function overridden<T extends Endpoint>(top: T, o: EndpointOverride, forget: (top: T) => Partial<T>): T {
  const ownUrl = set(o.url);
  const base: T =
    ownUrl === undefined
      ? top
      : { ...top, tenant_id: null, auth: "basic" as const, auth_token: null, ...forget(top) };
  return {
    ...base,
    url: ownUrl ?? top.url,
    tenant_id: set(o.tenant_id) ?? base.tenant_id,
    auth: o.auth ?? base.auth,
    auth_token: set(o.auth_token) ?? base.auth_token,
    auth_token_file: null,
  };
}

/** An own url keeps trusting the top-level CA bundle, but presents no client certificate meant for another. */
function ownTls(tls: LokiConfig["tls"]): LokiConfig["tls"] {
  return { ...tls, cert_file: null, key_file: null };
}

/** One org's `sink.otlp`: an own url inherits no headers either (they may carry credentials). */
function orgOtlp(top: OtlpConfig, o: Config["orgs"][number]["sink"]["otlp"]): OtlpConfig {
  return overridden(top, o, (t) => ({ headers: {}, tls: ownTls(t.tls) }));
}

/** One org's `sink.loki`, its egress overrides applied over the top-level ones. */
function orgLoki(top: LokiConfig, o: Config["orgs"][number]["sink"]["loki"]): LokiConfig {
  const egress: EgressConfig = {
    max_lines_per_second: o.egress.max_lines_per_second ?? top.egress.max_lines_per_second,
    max_bytes_per_second: o.egress.max_bytes_per_second ?? top.egress.max_bytes_per_second,
    daily_byte_budget: o.egress.daily_byte_budget ?? top.egress.daily_byte_budget,
    budget_action: o.egress.budget_action ?? top.egress.budget_action,
  };
  // Nor the query URL: lookups go to the Loki the org pushes to (derived from its own url).
  const loki = overridden(top, o, (t) => ({
    reconcile: { ...t.reconcile, query_url: null },
    tls: ownTls(t.tls),
  }));
  return { ...loki, egress };
}

function sameEgress(a: EgressConfig, b: EgressConfig): boolean {
  return (
    a.max_lines_per_second === b.max_lines_per_second &&
    a.max_bytes_per_second === b.max_bytes_per_second &&
    a.daily_byte_budget === b.daily_byte_budget &&
    a.budget_action === b.budget_action
  );
}

/**
 * Every destination, the top-level one first (it exists even when every org has its own: `doctor`
 * and the single-org paths use it). Throws a ConfigError naming the org when two orgs that share a
 * destination ask for different egress limits: the governor is per destination, not per org.
 */
export function resolveDestinations(config: Config): LokiDestination[] {
  const top = config.sink.loki;
  const type = config.sink.type;
  const main: LokiDestination = {
    name: "",
    orgs: [],
    loki: top,
    otlp: config.sink.otlp,
    where: `sink.${type}`,
    budgetKey: BUDGET_KEY,
  };
  const byIdentity = new Map<string, LokiDestination>([[identity(type, top, config.sink.otlp), main]]);
  const out = [main];
  if (config.orgs.length === 0) {
    main.orgs.push("");
    return out;
  }
  for (const org of config.orgs) {
    const loki = orgLoki(top, org.sink.loki);
    const otlp = orgOtlp(config.sink.otlp, org.sink.otlp);
    const key = identity(type, loki, otlp);
    let dest = byIdentity.get(key);
    if (!dest) {
      dest = {
        name: org.name,
        orgs: [],
        loki,
        otlp,
        where: `orgs[${org.name}].sink.${type}`,
        budgetKey: `${BUDGET_KEY}:${org.name}`,
      };
      byIdentity.set(key, dest);
      out.push(dest);
    } else if (!sameEgress(dest.loki.egress, loki.egress)) {
      const other = dest.name === "" ? "the top-level sink.loki" : `org '${dest.name}'`;
      throw new ConfigError(
        `org '${org.name}': orgs[].sink.loki.egress differs from that of ${other}, which sends to the same ` +
          `Loki url, tenant and credentials; egress limits and the daily budget are per destination: set ` +
          `them in one place, or give org '${org.name}' its own tenant_id or url`,
      );
    }
    dest.orgs.push(org.name);
  }
  return out;
}

/** The destination an org's entries go to ("" for the single org). */
export function destinationOf(destinations: readonly LokiDestination[], org: string): LokiDestination {
  const found = destinations.find((d) => d.orgs.includes(org));
  if (!found) throw new Error(`no Loki destination resolved for org '${org}'`);
  return found;
}

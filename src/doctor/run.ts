// `sf2loki doctor`: every dependency the daemon needs, checked live with the daemon's own clients, in
// the order of spec C §3.6. The graph is the daemon's (wiring.ts buildGraph), so a config that passes
// here is the config the daemon runs; a check whose dependency failed is SKIP with the reason.
import { loadConfig } from "../config/load.ts";
import { resolvedOrgs, selectOrg } from "../config/orgs.ts";
import type { Config } from "../config/schema.ts";
import { describeError } from "../errors.ts";
import type { Labels } from "../model.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { buildGraph, type Graph } from "../daemon/wiring.ts";
import { fail, pass, skip, warn, type CheckRow, type DoctorEnv, type OrgUnderCheck } from "./check.ts";
import { checkAuth } from "./checks/auth.ts";
import { checkCoordinator } from "./checks/coordinator.ts";
import { checkEntitlement } from "./checks/entitlement.ts";
import { checkLimits } from "./checks/limits.ts";
import { checkLoki } from "./checks/loki.ts";
import { checkPermissions } from "./checks/permissions.ts";
import { checkProxy } from "./checks/proxy.ts";
import { checkPubSub } from "./checks/pubsub.ts";
import { checkManagedSubscriptions } from "./checks/pubsub-managed.ts";
import { checkState } from "./checks/state.ts";
import { checkTelemetry } from "./checks/telemetry.ts";
import { checkTraceFlags } from "./checks/traceflags.ts";
import { checkTransforms } from "./checks/transforms.ts";

/** Every check after `config`, in order; the names a failed config or org selection SKIPs. */
export const CHECK_ORDER = [
  "proxy",
  "auth",
  "permissions",
  "pubsub",
  "pubsub_managed",
  "entitlement",
  "traceflags",
  "loki",
  "transforms",
  "telemetry",
  "state",
  "coordinator",
  "limits",
] as const;

/** A single network call may take this long before its row FAILs (a hung endpoint is a finding). */
const CALL_TIMEOUT_MS = 30_000;

export interface DoctorOptions {
  configPath: string | undefined;
  env: Record<string, string | undefined>;
  /** Narrows to one org; every org by default. */
  org?: string;
  clock?: Clock;
  signal?: AbortSignal;
}

/** `config`: the config or the org selection failed (exit 2); `failed`: some row FAILed (exit 1). */
export type DoctorOutcome = "ok" | "failed" | "config";

export interface DoctorResult {
  rows: CheckRow[];
  outcome: DoctorOutcome;
}

export async function runDoctor(opts: DoctorOptions): Promise<DoctorResult> {
  const clock = opts.clock ?? systemClock;
  let config: Config;
  let graph: Graph;
  try {
    config = await loadConfig(opts.configPath, opts.env);
    graph = buildGraph(config, { clock });
  } catch (err) {
    const rows = [fail("config", describeError(err)), ...CHECK_ORDER.map((n) => skip(n, "config failed"))];
    return { rows, outcome: "config" };
  }
  const rows: CheckRow[] = [
    pass("config", `config loaded and wired (${resolvedOrgs(config).length} org(s))`),
  ];
  try {
    const orgs = chooseOrgs(config, graph, opts.org, rows);
    if (!orgs) {
      rows.push(...CHECK_ORDER.map((n) => skip(n, "org selection failed")));
      return { rows, outcome: "config" };
    }
    const env: DoctorEnv = {
      config,
      graph,
      clock,
      env: opts.env,
      signal: opts.signal ?? new AbortController().signal,
    };
    await runChecks(env, orgs, rows);
  } finally {
    await closeGraph(graph);
  }
  return { rows, outcome: rows.some((r) => r.status === "FAIL") ? "failed" : "ok" };
}

function chooseOrgs(
  config: Config,
  graph: Graph,
  name: string | undefined,
  rows: CheckRow[],
): OrgUnderCheck[] | undefined {
  const all = graph.orgs.map((wiring) => ({ wiring, name: wiring.org.name }));
  if (name === undefined) return all;
  if (config.orgs.length === 0) {
    rows.push(warn("org", `single-org config: --org '${name}' ignored`));
    return all;
  }
  try {
    const chosen = selectOrg(config, name);
    return all.filter((o) => o.name === chosen.name);
  } catch (err) {
    rows.push(fail("org", describeError(err)));
    return undefined;
  }
}

/** `prod/auth` under multi-org, with `org` set; unchanged for single-org. */
function scoped(org: OrgUnderCheck, row: CheckRow): CheckRow {
  return org.name === "" ? row : { ...row, name: `${org.name}/${row.name}`, org: org.name };
}

async function runChecks(env: DoctorEnv, orgs: OrgUnderCheck[], rows: CheckRow[]): Promise<void> {
  const signal = (): AbortSignal => AbortSignal.any([env.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
  rows.push(...(await checkProxy(env, orgs)));
  const authed = new Map<OrgUnderCheck, boolean>();
  for (const org of orgs) {
    const row = await checkAuth(org, signal());
    authed.set(org, row.status === "PASS");
    rows.push(scoped(org, row));
  }
  const perOrg = async (
    name: string,
    check: (org: OrgUnderCheck) => Promise<CheckRow | CheckRow[]>,
  ): Promise<void> => {
    for (const org of orgs) {
      if (!authed.get(org)) {
        rows.push(scoped(org, skip(name, "auth failed")));
        continue;
      }
      const out = await check(org);
      for (const row of Array.isArray(out) ? out : [out]) rows.push(scoped(org, row));
    }
  };
  await perOrg("permissions", (org) => checkPermissions(org, signal()));
  await perOrg("pubsub", (org) => checkPubSub(org, signal()));
  await perOrg("pubsub_managed", (org) => checkManagedSubscriptions(org, signal()));
  await perOrg("entitlement", (org) => checkEntitlement(org, env.clock, signal()));
  await perOrg("traceflags", (org) => checkTraceFlags(org, env.clock, signal()));
  const labels = await staticLabels(env, orgs, authed);
  // Every destination an org under check sends to (#123); the top-level one alone when it serves them.
  const names = new Set(orgs.map((o) => o.name));
  for (const target of env.graph.destinations) {
    if (!target.destination.orgs.some((o) => names.has(o))) continue;
    rows.push(await checkLoki({ ...env, signal: signal() }, labels, target));
  }
  rows.push(checkTransforms(env.config));
  rows.push(await checkTelemetry(env.config, signal()));
  rows.push(await checkState(env.config, signal()));
  rows.push(await checkCoordinator(env.config, env.env, signal()));
  await perOrg("limits", (org) => checkLimits(org, signal()));
}

/** The labels the daemon stamps on every entry (app.ts): the probe line looks like real data. */
async function staticLabels(
  env: DoctorEnv,
  orgs: OrgUnderCheck[],
  authed: Map<OrgUnderCheck, boolean>,
): Promise<Labels> {
  const base: Labels = { job: "sf2loki", service_name: "sf2loki" };
  const only = orgs.length === 1 && orgs[0]!.name === "" ? orgs[0]! : undefined;
  if (!only) return base;
  const orgId = authed.get(only) ? await only.wiring.auth.orgId().catch(() => undefined) : undefined;
  return {
    ...base,
    environment: only.wiring.org.salesforce.environment,
    ...(orgId ? { sf_org_id: orgId } : {}),
  };
}

async function closeGraph(graph: Graph): Promise<void> {
  await Promise.allSettled([
    ...graph.destinations.map((d) => d.sink.close()),
    ...graph.orgs.map((o) => o.rest.close()),
    graph.store.close(),
  ]);
}

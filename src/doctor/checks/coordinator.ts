// `coordinator`: the lease backend the config names, probed without ever taking leadership: the lease
// read through the coordinator's own backend (who holds it), then a write the backend needs: a probe
// file in the lease directory, a probe object beside the lease object, or a server-side dry-run
// update (or create) of the Kubernetes Lease.
import { open, unlink } from "node:fs/promises";
import { dirname, join } from "node:path";
import { buildCoordinator } from "../../coordinate/build.ts";
import { LeaseCoordinator } from "../../coordinate/lease/coordinator.ts";
import type { Config } from "../../config/schema.ts";
import { describeError } from "../../errors.ts";
import { fail, pass, skip, type CheckRow } from "../check.ts";
import { probeObject } from "./object-probe.ts";

export async function checkCoordinator(
  config: Config,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<CheckRow> {
  const c = config.coordinate;
  if (c.type === "noop") return skip("coordinator", "coordinate.type is noop (single replica)");
  let holder: string;
  try {
    const coordinator = buildCoordinator(c);
    const lease = coordinator instanceof LeaseCoordinator ? await coordinator.peek(signal) : undefined;
    const r = lease?.record;
    holder = !lease
      ? "lease does not exist yet"
      : !r || r.holder === ""
        ? `lease ${lease.where} is free`
        : `lease ${lease.where} held by '${r.holder}' (epoch ${r.epoch})`;
  } catch (err) {
    return fail(
      "coordinator",
      `reading the ${c.type} lease failed: ${describeError(err)}${permissionHint(c.type)}`,
    );
  }
  const problem = await probeWrite(config, env, signal);
  if (problem) return fail("coordinator", `${problem}${permissionHint(c.type)}`);
  return pass("coordinator", `${c.type}: ${holder}; write probe OK (leadership not taken)`);
}

function permissionHint(type: string): string {
  switch (type) {
    case "k8s_lease":
      return " (the ServiceAccount needs get, create and update on leases.coordination.k8s.io in the namespace)";
    case "file_lease":
      return " (the lease directory must be shared, writable storage: chown 10001 and chmod 770 it)";
    default:
      return "";
  }
}

async function probeWrite(
  config: Config,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<string | undefined> {
  const c = config.coordinate;
  switch (c.type) {
    case "file_lease": {
      const probe = join(dirname(c.file_lease.path), ".sf2loki-doctor-coordinator-probe");
      try {
        const handle = await open(probe, "w", 0o644);
        try {
          await handle.writeFile("sf2loki doctor probe\n");
          await handle.sync();
        } finally {
          await handle.close();
        }
        await unlink(probe);
        return undefined;
      } catch (err) {
        return `lease directory ${dirname(c.file_lease.path)} is not writable: ${describeError(err)}`;
      }
    }
    case "s3_lease":
    case "gcs_lease": {
      const probe =
        c.type === "s3_lease"
          ? await probeObject({ kind: "s3", settings: c.s3_lease, section: "coordinate.s3_lease" }, signal)
          : await probeObject(
              { kind: "gcs", settings: c.gcs_lease, section: "coordinate.gcs_lease" },
              signal,
            );
      return probe.problem;
    }
    case "k8s_lease":
      return k8sDryRun(config, env, signal);
    default:
      return undefined;
  }
}

async function k8sDryRun(
  config: Config,
  env: Record<string, string | undefined>,
  signal: AbortSignal,
): Promise<string | undefined> {
  const s = config.coordinate.k8s_lease;
  const { connectLeaseApi } = await import("../../coordinate/k8s-lease/client.ts");
  const { apiStatus, describeApiError } = await import("../../coordinate/k8s-lease/api.ts");
  try {
    const api = connectLeaseApi(s, env);
    let current;
    try {
      current = await api.read(signal);
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
    }
    if (current) await api.replace(current, signal, { dryRun: true });
    else {
      await api.create(
        {
          metadata: { name: s.name, namespace: s.namespace },
          spec: {
            holderIdentity: "sf2loki-doctor-dry-run",
            leaseDurationSeconds: Math.ceil(s.lease_duration / 1000),
          },
        },
        signal,
        { dryRun: true },
      );
    }
    return undefined;
  } catch (err) {
    return `dry-run update of Lease ${s.namespace}/${s.name} failed: ${describeApiError(err)}`;
  }
}

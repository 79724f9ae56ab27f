// LeaseRecord <-> coordination.k8s.io/v1 Lease. Every spec field may be null or missing (#62); the
// epoch fence is spec.leaseTransitions (#98): set on every acquisition, kept by renewals and releases.
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseRecord, LeaseSnapshot } from "../lease/backend.ts";
import type { LeaseObject } from "./api.ts";

export function leaseSnapshot(lease: LeaseObject, where: string): LeaseSnapshot {
  const version = lease.metadata.resourceVersion;
  // Without a resourceVersion a replace would be unconditional: refuse to treat that as readable.
  if (!version) throw new LeaseUnreadableError(where, "the API returned a Lease without a resourceVersion");
  const { holderIdentity, leaseDurationSeconds: seconds, leaseTransitions: transitions } = lease.spec;
  return {
    version,
    record: {
      holder: holderIdentity ?? "",
      epoch:
        typeof transitions === "number" && Number.isSafeInteger(transitions) && transitions > 0
          ? transitions
          : 0,
      ttlMs: typeof seconds === "number" && seconds > 0 ? seconds * 1000 : undefined,
      renewedAtMs: timeMs(lease.spec.renewTime),
      acquiredAtMs: timeMs(lease.spec.acquireTime),
    },
  };
}

/**
 * The Lease to write: `base` (the one last read or written at `version`) carries the fields we do not
 * own, such as labels, annotations, strategy or preferredHolder.
 */
export function leaseBody(
  record: LeaseRecord,
  name: string,
  namespace: string,
  version: string | undefined,
  base: LeaseObject | undefined,
): LeaseObject {
  const spec: LeaseObject["spec"] = { ...base?.spec, leaseTransitions: record.epoch };
  if (record.holder === "") delete spec.holderIdentity;
  else spec.holderIdentity = record.holder;
  // Whole seconds on the wire; round up so a standby never waits less than the configured ttl.
  if (record.ttlMs !== undefined) spec.leaseDurationSeconds = Math.max(1, Math.ceil(record.ttlMs / 1000));
  if (record.renewedAtMs !== undefined) spec.renewTime = microTime(record.renewedAtMs);
  if (record.acquiredAtMs !== undefined) spec.acquireTime = microTime(record.acquiredAtMs);
  const metadata: LeaseObject["metadata"] = { ...base?.metadata, name, namespace };
  if (version === undefined) delete metadata.resourceVersion;
  else metadata.resourceVersion = version;
  return { metadata, spec };
}

/** Kubernetes MicroTime: RFC 3339 in UTC with exactly six fractional digits. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().slice(0, -1) + "000Z";
}

function timeMs(value: string | null | undefined): number | undefined {
  if (!value) return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : ms;
}

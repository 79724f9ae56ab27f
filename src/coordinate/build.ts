// Builds the configured coordinator. Offline: nothing here touches the network or the lease, so
// `--check` and the daemon share exactly this wiring; clients open at the top of `run`.
import { ConfigError, describeError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import type { Coordinator } from "./coordinator.ts";
import type { LeaseFs } from "./file-lease/atomic-write.ts";
import { FileLeaseBackend } from "./file-lease/backend.ts";
import type { LeaseApi } from "./k8s-lease/api.ts";
import { K8sLeaseBackend } from "./k8s-lease/backend.ts";
import { LeaseCoordinator } from "./lease/coordinator.ts";
import { NoopCoordinator } from "./noop.ts";
import { objectLeaseBackend, type ObjectLeaseDeps } from "./object-lease/build.ts";
import { objectLeaseHolder, type ObjectLeaseSections } from "./object-lease/settings.ts";
import {
  checkLeaseTiming,
  currentHost,
  fileLeaseHolder,
  k8sLeaseIdentity,
  type CoordinateSettings,
  type HostInfo,
  type K8sLeaseSettings,
} from "./settings.ts";

export interface CoordinatorDeps {
  clock?: Clock;
  logger?: Logger;
  /**
   * The highest epoch the checkpoint store has persisted (the file store's `__fence_epoch__`), read
   * fresh at every acquisition so a lost lease never restarts the epoch below it (#99).
   */
  epochFloor?: (signal: AbortSignal) => Promise<number | undefined>;
  host?: HostInfo;
  /** Storage seam for the file lease (tests inject faults); node:fs/promises by default. */
  fileFs?: LeaseFs;
  /** Client overrides for s3_lease / gcs_lease (tests pass static credentials or a retry policy). */
  objectLease?: Pick<
    ObjectLeaseDeps,
    "s3ClientConfig" | "gcsStorageOptions" | "azurePipelineOptions" | "retryPolicy"
  >;
}

/** A coordinator and its epoch fence token: undefined for noop (no fence), else the current term's epoch. */
export type BuiltCoordinator = Coordinator & { readonly epoch: number | undefined };

export function buildCoordinator(
  settings: CoordinateSettings & ObjectLeaseSections,
  deps: CoordinatorDeps = {},
): BuiltCoordinator {
  const host = deps.host ?? currentHost();
  const common = {
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.epochFloor ? { epochFloor: deps.epochFloor } : {}),
  };
  switch (settings.type) {
    case "noop":
      return new NoopCoordinator();
    case "file_lease": {
      const s = settings.file_lease;
      checkLeaseTiming("file_lease", "ttl", s.ttl, s.renew_interval);
      if (!s.path)
        throw new ConfigError("coordinate.file_lease.path is empty; set it to a file on shared storage");
      const backend = new FileLeaseBackend({
        path: s.path,
        ttlMs: s.ttl,
        renewIntervalMs: s.renew_interval,
        ...(deps.fileFs ? { fs: deps.fileFs } : {}),
      });
      return new LeaseCoordinator({
        ...common,
        backend,
        identity: fileLeaseHolder(s, host),
        ttlMs: s.ttl,
        renewIntervalMs: s.renew_interval,
      });
    }
    case "k8s_lease": {
      const s = settings.k8s_lease;
      checkLeaseTiming("k8s_lease", "lease_duration", s.lease_duration, s.renew_interval);
      if (!s.namespace || !s.name) {
        throw new ConfigError("coordinate.k8s_lease.namespace and .name must both be set");
      }
      const backend = new K8sLeaseBackend({
        namespace: s.namespace,
        name: s.name,
        connect: () => connectK8s(s, host.env),
      });
      return new LeaseCoordinator({
        ...common,
        backend,
        identity: k8sLeaseIdentity(s, host),
        ttlMs: s.lease_duration,
        renewIntervalMs: s.renew_interval,
      });
    }
    case "s3_lease":
    case "gcs_lease":
    case "azure_lease": {
      const { backend, lease } = objectLeaseBackend(settings.type, settings, {
        ...deps.objectLease,
        ...common,
      });
      return new LeaseCoordinator({
        ...common,
        backend,
        identity: objectLeaseHolder(lease, host, deps.clock ?? systemClock),
        ttlMs: lease.ttl,
        renewIntervalMs: lease.renew_interval,
      });
    }
  }
}

/** The Kubernetes client is large; load it only when a k8s_lease coordinator starts running. */
async function connectK8s(settings: K8sLeaseSettings, env: NodeJS.ProcessEnv): Promise<LeaseApi> {
  let client: typeof import("./k8s-lease/client.ts");
  try {
    client = await import("./k8s-lease/client.ts");
  } catch (err) {
    throw new ConfigError(
      `coordinate.type is 'k8s_lease' but the Kubernetes client cannot be loaded (${describeError(err)}); ` +
        `reinstall sf2loki with its dependencies`,
    );
  }
  return client.connectLeaseApi(settings, env);
}

// Builds the ShardManager `coordinate.sharding` asks for, on the configured lease type. Offline like
// buildCoordinator: clients open when the manager runs.
import type { Meter } from "@opentelemetry/api";
import { ConfigError, describeError } from "../../errors.ts";
import { azureBackend, gcsBackend, s3Backend } from "../../state/backends.ts";
import type { ObjectBackend } from "../../state/object-backend.ts";
import { systemClock } from "../../util/clock.ts";
import type { CoordinatorDeps } from "../build.ts";
import {
  azureLeaseBackend,
  gcsLeaseBackend,
  objectLeaseBackend,
  s3LeaseBackend,
} from "../object-lease/build.ts";
import { objectLeaseHolder, type ObjectLeaseSections } from "../object-lease/settings.ts";
import {
  checkLeaseTiming,
  currentHost,
  k8sLeaseIdentity,
  type CoordinateSettings,
  type K8sLeaseSettings,
} from "../settings.ts";
import { K8sShardSpace, type K8sLeaseClients } from "./k8s-space.ts";
import { ShardManager } from "./manager.ts";
import { ObjectShardSpace } from "./object-space.ts";
import type { ShardLeaseSpace } from "./space.ts";

export interface ShardManagerDeps extends Omit<CoordinatorDeps, "epochFloor" | "fileFs"> {
  meter?: Meter;
  epochFloor?: (shard: string) => ((signal: AbortSignal) => Promise<number | undefined>) | undefined;
  /** Replaces the lease space built from the config (tests). */
  space?: ShardLeaseSpace;
}

export function buildShardManager(
  settings: CoordinateSettings & ObjectLeaseSections,
  shards: readonly string[],
  deps: ShardManagerDeps = {},
): ShardManager {
  const host = deps.host ?? currentHost();
  const clock = deps.clock ?? systemClock;
  const { space, identity, ttlMs, renewMs } = leaseSpace(settings, deps, host);
  return new ShardManager({
    space: deps.space ?? space,
    shards,
    identity,
    ttlMs,
    renewIntervalMs: renewMs,
    clock,
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.meter ? { meter: deps.meter } : {}),
    ...(deps.epochFloor ? { epochFloor: deps.epochFloor } : {}),
  });
}

function leaseSpace(
  settings: CoordinateSettings & ObjectLeaseSections,
  deps: ShardManagerDeps,
  host: ReturnType<typeof currentHost>,
): { space: ShardLeaseSpace; identity: string; ttlMs: number; renewMs: number } {
  const clock = deps.clock ?? systemClock;
  const objectDeps = {
    ...deps.objectLease,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
  };
  switch (settings.type) {
    case "k8s_lease": {
      const s = settings.k8s_lease;
      checkLeaseTiming("k8s_lease", "lease_duration", s.lease_duration, s.renew_interval);
      if (!s.namespace || !s.name) {
        throw new ConfigError("coordinate.k8s_lease.namespace and .name must both be set");
      }
      return {
        space: new K8sShardSpace({
          namespace: s.namespace,
          name: s.name,
          connect: () => connectK8s(s, host.env),
        }),
        identity: k8sLeaseIdentity(s, host),
        ttlMs: s.lease_duration,
        renewMs: s.renew_interval,
      };
    }
    case "s3_lease": {
      const { lease } = objectLeaseBackend("s3_lease", settings, objectDeps);
      const s = settings.s3_lease!;
      const lister = s3Backend(s, deps.objectLease?.s3ClientConfig);
      return {
        space: new ObjectShardSpace({
          kind: "s3_lease",
          bucketUri: `s3://${s.bucket}`,
          prefix: s.key,
          backendAt: (key) => s3LeaseBackend({ ...s, key }, objectDeps),
          list: (prefix, signal) => listed(lister, prefix, signal),
          remove: (key, token, signal) =>
            once(s3Backend({ ...s, key }, deps.objectLease?.s3ClientConfig), token, signal),
        }),
        identity: objectLeaseHolder(lease, host, clock),
        ttlMs: lease.ttl,
        renewMs: lease.renew_interval,
      };
    }
    case "gcs_lease": {
      const { lease } = objectLeaseBackend("gcs_lease", settings, objectDeps);
      const s = settings.gcs_lease!;
      const lister = gcsBackend(s, {
        configSection: "coordinate.gcs_lease",
        storageOptions: deps.objectLease?.gcsStorageOptions,
      });
      return {
        space: new ObjectShardSpace({
          kind: "gcs_lease",
          bucketUri: `gs://${s.bucket}`,
          prefix: s.object_name,
          backendAt: (object_name) => gcsLeaseBackend({ ...s, object_name }, objectDeps),
          list: (prefix, signal) => listed(lister, prefix, signal),
          remove: (object_name, token, signal) =>
            once(
              gcsBackend(
                { ...s, object_name },
                {
                  configSection: "coordinate.gcs_lease",
                  storageOptions: deps.objectLease?.gcsStorageOptions,
                },
              ),
              token,
              signal,
            ),
        }),
        identity: objectLeaseHolder(lease, host, clock),
        ttlMs: lease.ttl,
        renewMs: lease.renew_interval,
      };
    }
    case "azure_lease": {
      const { lease } = objectLeaseBackend("azure_lease", settings, objectDeps);
      const s = settings.azure_lease!;
      const lister = azureBackend(s, {
        configSection: "coordinate.azure_lease",
        ...(deps.objectLease?.azurePipelineOptions
          ? { pipelineOptions: deps.objectLease.azurePipelineOptions }
          : {}),
      });
      return {
        space: new ObjectShardSpace({
          kind: "azure_lease",
          bucketUri: `azure://${s.container}`,
          prefix: s.blob_name,
          backendAt: (blob_name) => azureLeaseBackend({ ...s, blob_name }, objectDeps),
          list: (prefix, signal) => listed(lister, prefix, signal),
          remove: (blob_name, token, signal) =>
            once(
              azureBackend(
                { ...s, blob_name },
                {
                  configSection: "coordinate.azure_lease",
                  ...(deps.objectLease?.azurePipelineOptions
                    ? { pipelineOptions: deps.objectLease.azurePipelineOptions }
                    : {}),
                },
              ),
              token,
              signal,
            ),
        }),
        identity: objectLeaseHolder(lease, host, clock),
        ttlMs: lease.ttl,
        renewMs: lease.renew_interval,
      };
    }
    default:
      throw new ConfigError(
        `coordinate.sharding needs a lease every replica can list; coordinate.type '${settings.type}' has none: ` +
          "use k8s_lease, s3_lease, gcs_lease or azure_lease, or turn sharding off",
      );
  }
}

function listed(backend: ObjectBackend, prefix: string, signal: AbortSignal): Promise<string[]> {
  if (!backend.list) throw new Error(`${backend.hints.location}: this backend cannot list objects`);
  return backend.list(prefix, signal);
}

/** One conditional delete on a short-lived adapter (departed members are rare), then its client closed. */
async function once(backend: ObjectBackend, token: string | undefined, signal: AbortSignal): Promise<void> {
  try {
    await backend.delete?.(token, signal);
  } finally {
    await backend.close();
  }
}

async function connectK8s(settings: K8sLeaseSettings, env: NodeJS.ProcessEnv): Promise<K8sLeaseClients> {
  let client: typeof import("../k8s-lease/client.ts");
  let lists: typeof import("../k8s-lease/list-client.ts");
  try {
    client = await import("../k8s-lease/client.ts");
    lists = await import("../k8s-lease/list-client.ts");
  } catch (err) {
    throw new ConfigError(
      `coordinate.type is 'k8s_lease' but the Kubernetes client cannot be loaded (${describeError(err)}); ` +
        `reinstall sf2loki with its dependencies`,
    );
  }
  const kc = client.kubeConfigFor(settings, env);
  return {
    lease: (name) => client.leaseApiFor(kc, settings.namespace, name),
    list: lists.leaseListFor(kc, settings.namespace),
  };
}

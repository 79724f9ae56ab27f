// Builds an s3_lease, gcs_lease or azure_lease backend on the state layer's own S3, GCS and Azure
// adapters (same client construction, same SDK-retries-off settings, same error verdicts). Offline: the
// adapters load their SDK and create their clients on first use, inside `run`.
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import type { StoragePipelineOptions } from "@azure/storage-blob";
import type { StorageOptions } from "@google-cloud/storage";
import { ConfigError } from "../../errors.ts";
import type { Logger } from "../../obs/logger.ts";
import { azureBackend, gcsBackend, s3Backend } from "../../state/backends.ts";
import type { ObjectBackend } from "../../state/object-backend.ts";
import type { Clock } from "../../util/clock.ts";
import type { RetryPolicy } from "../../util/retry.ts";
import { checkLeaseTiming } from "../settings.ts";
import { ObjectLeaseBackend } from "./backend.ts";
import type {
  AzureLeaseSettings,
  GcsLeaseSettings,
  ObjectLeaseSections,
  S3LeaseSettings,
} from "./settings.ts";

export interface ObjectLeaseDeps {
  clock?: Clock;
  logger?: Logger;
  retryPolicy?: RetryPolicy;
  /** Merged over the derived S3 client config (tests pass static credentials). */
  s3ClientConfig?: Partial<S3ClientConfig>;
  /** Merged over the derived GCS client options (tests only). */
  gcsStorageOptions?: StorageOptions;
  /** Merged over the derived Azure pipeline options (tests only). */
  azurePipelineOptions?: StoragePipelineOptions;
}

export type ObjectLeaseKind = "s3_lease" | "gcs_lease" | "azure_lease";

/** The backend the configured type names, and its section (for the timing and the identity). */
export function objectLeaseBackend(
  kind: ObjectLeaseKind,
  settings: ObjectLeaseSections,
  deps: ObjectLeaseDeps = {},
): { backend: ObjectLeaseBackend; lease: S3LeaseSettings | GcsLeaseSettings | AzureLeaseSettings } {
  if (kind === "s3_lease") {
    const lease = section("s3_lease", settings.s3_lease);
    return { backend: s3LeaseBackend(lease, deps), lease };
  }
  if (kind === "azure_lease") {
    const lease = section("azure_lease", settings.azure_lease);
    return { backend: azureLeaseBackend(lease, deps), lease };
  }
  const lease = section("gcs_lease", settings.gcs_lease);
  return { backend: gcsLeaseBackend(lease, deps), lease };
}

function section<T extends { ttl: number; renew_interval: number }>(kind: string, lease: T | undefined): T {
  if (!lease) throw new ConfigError(`coordinate.type is '${kind}' but coordinate.${kind} is missing`);
  checkLeaseTiming(kind, "ttl", lease.ttl, lease.renew_interval);
  return lease;
}

export function s3LeaseBackend(settings: S3LeaseSettings, deps: ObjectLeaseDeps = {}): ObjectLeaseBackend {
  required("s3_lease", "bucket", settings.bucket);
  required("s3_lease", "key", settings.key);
  const at = (key: string) => s3Backend({ ...settings, key }, deps.s3ClientConfig);
  return leaseBackend("s3_lease", at(settings.key), at(`${settings.key}.epoch`), settings, deps);
}

export function gcsLeaseBackend(settings: GcsLeaseSettings, deps: ObjectLeaseDeps = {}): ObjectLeaseBackend {
  required("gcs_lease", "bucket", settings.bucket);
  required("gcs_lease", "object_name", settings.object_name);
  const at = (object_name: string) =>
    gcsBackend(
      { ...settings, object_name },
      { configSection: "coordinate.gcs_lease", storageOptions: deps.gcsStorageOptions },
    );
  return leaseBackend(
    "gcs_lease",
    at(settings.object_name),
    at(`${settings.object_name}.epoch`),
    settings,
    deps,
  );
}

export function azureLeaseBackend(
  settings: AzureLeaseSettings,
  deps: ObjectLeaseDeps = {},
): ObjectLeaseBackend {
  required("azure_lease", "container", settings.container);
  required("azure_lease", "blob_name", settings.blob_name);
  const at = (blob_name: string) =>
    azureBackend(
      { ...settings, blob_name },
      {
        configSection: "coordinate.azure_lease",
        ...(deps.azurePipelineOptions ? { pipelineOptions: deps.azurePipelineOptions } : {}),
      },
    );
  return leaseBackend(
    "azure_lease",
    at(settings.blob_name),
    at(`${settings.blob_name}.epoch`),
    settings,
    deps,
  );
}

function leaseBackend(
  kind: ObjectLeaseKind,
  lease: ObjectBackend,
  sidecar: ObjectBackend,
  settings: { ttl: number },
  deps: ObjectLeaseDeps,
): ObjectLeaseBackend {
  return new ObjectLeaseBackend({
    kind,
    lease,
    sidecar,
    ttlMs: settings.ttl,
    ...(deps.clock ? { clock: deps.clock } : {}),
    ...(deps.logger ? { logger: deps.logger } : {}),
    ...(deps.retryPolicy ? { retryPolicy: deps.retryPolicy } : {}),
  });
}

function required(section: string, key: string, value: string | undefined): void {
  if (!value?.trim()) {
    throw new ConfigError(
      `coordinate.type is '${section}' but coordinate.${section}.${key} is empty; set it in the config`,
    );
  }
}

// Builds an s3_lease or gcs_lease backend on the state layer's own S3 and GCS adapters (same client
// construction, same SDK-retries-off settings, same error verdicts). Offline: the adapters create
// their clients on first use, inside `run`.
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import type { StorageOptions } from "@google-cloud/storage";
import { ConfigError } from "../../errors.ts";
import type { Logger } from "../../obs/logger.ts";
import { GcsBackend } from "../../state/gcs-store.ts";
import { S3Backend } from "../../state/s3-store.ts";
import type { Clock } from "../../util/clock.ts";
import type { RetryPolicy } from "../../util/retry.ts";
import { checkLeaseTiming } from "../settings.ts";
import { ObjectLeaseBackend } from "./backend.ts";
import type { GcsLeaseSettings, ObjectLeaseSections, S3LeaseSettings } from "./settings.ts";

export interface ObjectLeaseDeps {
  clock?: Clock;
  logger?: Logger;
  retryPolicy?: RetryPolicy;
  /** Merged over the derived S3 client config (tests pass static credentials). */
  s3ClientConfig?: Partial<S3ClientConfig>;
  /** Merged over the derived GCS client options (tests only). */
  gcsStorageOptions?: StorageOptions;
}

/** The backend the configured type names, and its section (for the timing and the identity). */
export function objectLeaseBackend(
  kind: "s3_lease" | "gcs_lease",
  settings: ObjectLeaseSections,
  deps: ObjectLeaseDeps = {},
): { backend: ObjectLeaseBackend; lease: S3LeaseSettings | GcsLeaseSettings } {
  if (kind === "s3_lease") {
    const lease = section("s3_lease", settings.s3_lease);
    return { backend: s3LeaseBackend(lease, deps), lease };
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
  const at = (key: string) => new S3Backend({ ...settings, key }, deps.s3ClientConfig);
  return leaseBackend("s3_lease", at(settings.key), at(`${settings.key}.epoch`), settings, deps);
}

export function gcsLeaseBackend(settings: GcsLeaseSettings, deps: ObjectLeaseDeps = {}): ObjectLeaseBackend {
  required("gcs_lease", "bucket", settings.bucket);
  required("gcs_lease", "object_name", settings.object_name);
  const at = (object_name: string) =>
    new GcsBackend(
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

function leaseBackend(
  kind: "s3_lease" | "gcs_lease",
  lease: S3Backend | GcsBackend,
  sidecar: S3Backend | GcsBackend,
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

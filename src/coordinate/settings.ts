// The `coordinate:` block of the config file exactly as the config loader emits it (YAML keys; the
// durations already parsed to milliseconds), plus the defaults and checks the coordinators rely on.
import { hostname } from "node:os";
import { ConfigError } from "../errors.ts";

export type CoordinatorType = "noop" | "file_lease" | "k8s_lease" | "s3_lease" | "gcs_lease" | "azure_lease";

export interface FileLeaseSettings {
  /** On storage every replica shares. Default `/var/lib/sf2loki/leader.lease`. */
  path: string;
  /** ms. */
  ttl: number;
  /** ms. */
  renew_interval: number;
  /** "" means `<hostname>-<pid>`. */
  holder_id: string;
}

export interface K8sLeaseSettings {
  namespace: string;
  name: string;
  /** "" means $HOSTNAME (the pod name), then `<hostname>-<pid>`. */
  identity: string;
  /** ms. */
  lease_duration: number;
  /** ms. */
  renew_interval: number;
  /** null: in-cluster service account; a path: that kubeconfig (out-of-cluster development). */
  kubeconfig?: string | null;
}

export interface ShardingSettings {
  /** Off by default: one active leader for every org. */
  enabled: boolean;
}

export interface CoordinateSettings {
  type: CoordinatorType;
  file_lease: FileLeaseSettings;
  k8s_lease: K8sLeaseSettings;
  /** Optional so callers that predate sharding (tests, the CLI) still type-check. */
  sharding?: ShardingSettings;
}

/** Where the process runs, injectable so identity defaults are testable. */
export interface HostInfo {
  hostname: string;
  pid: number;
  env: NodeJS.ProcessEnv;
}

export function currentHost(): HostInfo {
  return { hostname: hostname(), pid: process.pid, env: process.env };
}

export function fileLeaseHolder(settings: FileLeaseSettings, host: HostInfo): string {
  return settings.holder_id || `${host.hostname}-${host.pid}`;
}

export function k8sLeaseIdentity(settings: K8sLeaseSettings, host: HostInfo): string {
  return settings.identity || host.env.HOSTNAME || `${host.hostname}-${host.pid}`;
}

/**
 * The one timing rule every lease shares: a renewal must fit twice into the ttl, so one failed renewal
 * can be retried before the leader has to fence itself.
 */
export function checkLeaseTiming(key: string, ttlKey: string, ttlMs: number, renewMs: number): void {
  if (!(ttlMs > 0) || !(renewMs > 0)) {
    throw new ConfigError(
      `coordinate.${key}: ${ttlKey} (${ttlMs} ms) and renew_interval (${renewMs} ms) must both be positive`,
    );
  }
  if (renewMs * 2 >= ttlMs) {
    throw new ConfigError(
      `coordinate.${key}: renew_interval (${renewMs} ms) must be less than half of ${ttlKey} (${ttlMs} ms); ` +
        `lower renew_interval or raise ${ttlKey}`,
    );
  }
}

// The `coordinate.s3_lease`, `coordinate.gcs_lease` and `coordinate.azure_lease` blocks exactly as the
// config loader emits them (YAML keys; durations already in ms). The location keys are the state stores'
// own, so the same S3, GCS or Azure adapter reads them.
import type { AzureStateSettings } from "../../state/settings.ts";
import type { Clock } from "../../util/clock.ts";
import type { HostInfo } from "../settings.ts";

interface LeaseTiming {
  /** ms. */
  ttl: number;
  /** ms. */
  renew_interval: number;
  /** "" means `<hostname>-<pid>-<random>`. */
  holder_id: string;
}

export interface S3LeaseSettings extends LeaseTiming {
  bucket: string;
  /** Default `sf2loki/leader.lease`. */
  key: string;
  region?: string | null;
  endpoint_url?: string | null;
  force_path_style?: boolean | null;
}

export interface GcsLeaseSettings extends LeaseTiming {
  bucket: string;
  /** Default `sf2loki/leader.lease`. */
  object_name: string;
  service_file?: string | null;
  endpoint_url?: string | null;
}

/** `blob_name` defaults to `sf2loki/leader.lease`. */
export interface AzureLeaseSettings extends LeaseTiming, AzureStateSettings {}

/** The sections as they sit in `coordinate:`. */
export interface ObjectLeaseSections {
  s3_lease?: S3LeaseSettings;
  gcs_lease?: GcsLeaseSettings;
  azure_lease?: AzureLeaseSettings;
}

/**
 * `holder_id`, or `<hostname>-<pid>-<8 hex>`. The random part matters on the platforms this lease is
 * for: serverless instances may share one hostname (Cloud Run's are commonly `localhost`) and run as
 * pid 1, and two replicas sharing an identity would each take the other's live lease "back" at once.
 */
export function objectLeaseHolder(settings: LeaseTiming, host: HostInfo, clock: Clock): string {
  if (settings.holder_id) return settings.holder_id;
  const suffix = Math.floor(clock.random() * 0x1_0000_0000)
    .toString(16)
    .padStart(8, "0");
  return `${host.hostname}-${host.pid}-${suffix}`;
}

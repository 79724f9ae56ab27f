// The `state:` block of the YAML config, key for key (snake_case), as the stores take it. The zod schema
// elsewhere produces this shape with its defaults applied; nothing here validates beyond what a store needs.

export interface FileStateSettings {
  path: string;
}

export interface S3StateSettings {
  bucket: string;
  /** Default `sf2loki/state.json`. */
  key: string;
  region?: string | null;
  /** For MinIO, R2, Ceph and other S3-compatible servers. */
  endpoint_url?: string | null;
  /** Defaults to true when `endpoint_url` is set (most S3-compatible servers want path-style URLs). */
  force_path_style?: boolean | null;
}

export interface GcsStateSettings {
  bucket: string;
  /** Default `sf2loki/state.json`. */
  object_name: string;
  /** A service-account JSON key; null means Application Default Credentials. */
  service_file?: string | null;
  /** For an emulator (fake-gcs-server); no credentials are sent to it unless `service_file` is set. */
  endpoint_url?: string | null;
}

/** `default`: the DefaultAzureCredential chain (workload identity, managed identity, az login). */
export type AzureCredentialKind = "default" | "connection_string";

export interface AzureStateSettings {
  /** `https://<account>.blob.core.windows.net`; required with the default credential chain. */
  account_url?: string | null;
  container: string;
  /** Default `sf2loki/state.json`. */
  blob_name: string;
  credential: AzureCredentialKind;
  /** Resolved by the config loader from `connection_string` or `connection_string_file`. */
  connection_string?: string | null;
}

export interface StateSettings {
  store: "file" | "s3" | "gcs" | "azure";
  file: FileStateSettings;
  s3: S3StateSettings;
  gcs: GcsStateSettings;
  /** Optional so a tree without the section (tests, older callers) still type-checks. */
  azure?: AzureStateSettings;
}

export const DEFAULT_OBJECT_NAME = "sf2loki/state.json";

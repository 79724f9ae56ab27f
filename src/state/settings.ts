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

export interface StateSettings {
  store: "file" | "s3" | "gcs";
  file: FileStateSettings;
  s3: S3StateSettings;
  gcs: GcsStateSettings;
}

export const DEFAULT_OBJECT_NAME = "sf2loki/state.json";

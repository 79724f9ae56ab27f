// The state layer's public surface.
export type { CheckpointStore, WriteFence } from "./store.ts";
export { RESERVED_KEYS } from "./document.ts";
export { buildStore, type BuildStoreOptions } from "./build.ts";
export type {
  StateSettings,
  FileStateSettings,
  S3StateSettings,
  GcsStateSettings,
  AzureStateSettings,
} from "./settings.ts";
export { DEFAULT_OBJECT_NAME } from "./settings.ts";
export { FileCheckpointStore, type FileStoreOptions } from "./file-store.ts";
export { S3CheckpointStore, s3ClientConfig, type S3StoreOptions } from "./s3-store.ts";
export { GcsCheckpointStore, gcsStorageOptions, type GcsStoreOptions } from "./gcs-store.ts";
export { AzureCheckpointStore, type AzureStoreOptions } from "./azure/store.ts";
export { azurePipelineOptions } from "./azure/client.ts";
export { ObjectCheckpointStore, OBJECT_STORE_RETRY, type ObjectStoreOptions } from "./object-store.ts";
export { OrgCheckpointView, orgPrefix, type OrgViewOptions } from "./org-view.ts";
export { FENCE_EPOCH_KEY } from "./document.ts";
export {
  StateAccessDeniedError,
  StateFenceError,
  StateFileCorruptError,
  StateFileLockError,
  StateObjectCorruptError,
  StateStoreConflictError,
  StateWriteUnverifiedError,
} from "./errors.ts";

// The public API of the sf2loki package.
export { loadConfig, validateConfig } from "./config/load.ts";
export type { Config, OrgConfig, SalesforceConfig, SourcesConfig } from "./config/schema.ts";
export { ConfigError, Sf2LokiError } from "./errors.ts";
export { createApp, type App, type AppDeps } from "./daemon/app.ts";
export { buildStore, type BuildStoreOptions } from "./state/build.ts";
export type { CheckpointStore, WriteFence } from "./state/store.ts";
export {
  StateStoreConflictError,
  StateObjectCorruptError,
  StateFileCorruptError,
  StateFileLockError,
  StateFenceError,
  StateAccessDeniedError,
} from "./state/errors.ts";
export type { Source, CheckpointReader } from "./sources/source.ts";
export type { Sink, PushResult } from "./sinks/sink.ts";
export { RetryableSinkError, PermanentSinkError } from "./sinks/sink.ts";
export type { Coordinator } from "./coordinate/coordinator.ts";
export { LogEntry, type CheckpointToken, type Batch, type Labels } from "./model.ts";

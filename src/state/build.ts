// The one place that turns the `state:` config block into a store. Offline by design: `--check` and
// the daemon share this wiring, and no client touches the network until the first load or commit.
// The cloud SDKs load at that first call too (backends.ts), so a file-store daemon never loads one.
import { ConfigError } from "../errors.ts";
import type { Logger } from "../obs/logger.ts";
import type { Clock } from "../util/clock.ts";
import { azureBackend, gcsBackend, s3Backend } from "./backends.ts";
import { FileCheckpointStore } from "./file-store.ts";
import { ObjectCheckpointStore } from "./object-store.ts";
import type { StateSettings } from "./settings.ts";
import type { CheckpointStore } from "./store.ts";

export interface BuildStoreOptions {
  /** File store only: take the `.lock` sidecar. The daemon passes `coordinate.type == "noop"`, the CLI `!force`. */
  exclusiveLock?: boolean;
  clock?: Clock;
  logger?: Logger;
}

export function buildStore(state: StateSettings, opts: BuildStoreOptions = {}): CheckpointStore {
  const common = {
    ...(opts.clock ? { clock: opts.clock } : {}),
    ...(opts.logger ? { logger: opts.logger } : {}),
  };
  switch (state.store) {
    case "file":
      required("state.file.path", state.file.path, "file");
      return new FileCheckpointStore(state.file, { ...common, exclusiveLock: opts.exclusiveLock ?? true });
    case "s3":
      required("state.s3.bucket", state.s3.bucket, "s3");
      required("state.s3.key", state.s3.key, "s3");
      return new ObjectCheckpointStore(s3Backend(state.s3), common);
    case "gcs":
      required("state.gcs.bucket", state.gcs.bucket, "gcs");
      required("state.gcs.object_name", state.gcs.object_name, "gcs");
      return new ObjectCheckpointStore(gcsBackend(state.gcs), common);
    case "azure": {
      const azure = state.azure;
      if (!azure) throw new ConfigError("state.store is 'azure' but the state.azure section is missing");
      required("state.azure.container", azure.container, "azure");
      required("state.azure.blob_name", azure.blob_name, "azure");
      return new ObjectCheckpointStore(azureBackend(azure), common);
    }
    default:
      throw new ConfigError(
        `state.store is ${JSON.stringify(state.store)}; choose one of "file", "s3", "gcs" or "azure"`,
      );
  }
}

function required(key: string, value: string | undefined, store: string): void {
  if (value === undefined || value.trim() === "") {
    throw new ConfigError(`state.store is '${store}' but ${key} is empty; set ${key} in the config`);
  }
}

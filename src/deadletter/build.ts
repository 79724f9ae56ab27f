// The one place that turns the `state:` and `deadletter:` config blocks into a dead-letter store, on
// the checkpoint store's backend, with its credentials. Offline: nothing touches the network here, and
// the cloud SDKs load at the first request (folders/lazy.ts).
import { ConfigError } from "../errors.ts";
import type { StateSettings } from "../state/settings.ts";
import type { Clock } from "../util/clock.ts";
import { deadLetterDirectory, FileDeadLetterStore } from "./file-store.ts";
import { azureAccountName } from "../state/azure/account.ts";
import { LazyFolder } from "./folders/lazy.ts";
import { deadLetterPrefix } from "./object-folder.ts";
import { ObjectDeadLetterStore } from "./object-store.ts";
import type { DeadLetterBounds, DeadLetterStore } from "./types.ts";

export interface DeadLetterSettings {
  enabled: boolean;
  max_bytes: number;
  max_entries: number;
}

export function deadLetterBounds(settings: DeadLetterSettings): DeadLetterBounds {
  return { maxBytes: settings.max_bytes, maxEntries: settings.max_entries };
}

export function buildDeadLetterStore(
  state: StateSettings,
  settings: DeadLetterSettings,
  clock: Clock,
): DeadLetterStore {
  const bounds = deadLetterBounds(settings);
  switch (state.store) {
    case "file":
      return new FileDeadLetterStore(deadLetterDirectory(state.file.path), bounds, clock);
    case "s3": {
      const { s3 } = state;
      const prefix = deadLetterPrefix(s3.key);
      const folder = new LazyFolder(
        `s3://${s3.bucket}/${prefix}`,
        "the S3 client (@aws-sdk/client-s3)",
        async () => {
          const { S3Folder } = await import("./folders/s3.ts");
          return new S3Folder(s3, prefix);
        },
      );
      return new ObjectDeadLetterStore(folder, bounds, clock);
    }
    case "gcs": {
      const { gcs } = state;
      const prefix = deadLetterPrefix(gcs.object_name);
      const folder = new LazyFolder(
        `gs://${gcs.bucket}/${prefix}`,
        "the GCS client (@google-cloud/storage)",
        async () => {
          const { GcsFolder } = await import("./folders/gcs.ts");
          return new GcsFolder(gcs, prefix);
        },
      );
      return new ObjectDeadLetterStore(folder, bounds, clock);
    }
    case "azure": {
      const azure = state.azure;
      if (!azure) throw new ConfigError("state.store is 'azure' but the state.azure section is missing");
      const prefix = deadLetterPrefix(azure.blob_name);
      const location = `azure://${azureAccountName(azure, "state.azure")}/${azure.container}/${prefix}`;
      const folder = new LazyFolder(location, "the Azure Blob client (@azure/storage-blob)", async () => {
        const { AzureFolder } = await import("./folders/azure.ts");
        return new AzureFolder(azure, prefix);
      });
      return new ObjectDeadLetterStore(folder, bounds, clock);
    }
    default:
      throw new ConfigError(
        `state.store is ${JSON.stringify(state.store)}; the dead-letter store cannot follow it`,
      );
  }
}

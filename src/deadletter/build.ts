// The one place that turns the `state:` and `deadletter:` config blocks into a dead-letter store, on
// the checkpoint store's backend, with its credentials. Offline: nothing touches the network here.
import { ConfigError } from "../errors.ts";
import type { StateSettings } from "../state/settings.ts";
import type { Clock } from "../util/clock.ts";
import { deadLetterDirectory, FileDeadLetterStore } from "./file-store.ts";
import { AzureFolder } from "./folders/azure.ts";
import { GcsFolder } from "./folders/gcs.ts";
import { S3Folder } from "./folders/s3.ts";
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
    case "s3":
      return new ObjectDeadLetterStore(new S3Folder(state.s3, deadLetterPrefix(state.s3.key)), bounds, clock);
    case "gcs":
      return new ObjectDeadLetterStore(
        new GcsFolder(state.gcs, deadLetterPrefix(state.gcs.object_name)),
        bounds,
        clock,
      );
    case "azure": {
      if (!state.azure)
        throw new ConfigError("state.store is 'azure' but the state.azure section is missing");
      return new ObjectDeadLetterStore(
        new AzureFolder(state.azure, deadLetterPrefix(state.azure.blob_name)),
        bounds,
        clock,
      );
    }
    default:
      throw new ConfigError(
        `state.store is ${JSON.stringify(state.store)}; the dead-letter store cannot follow it`,
      );
  }
}

// The Azure Blob checkpoint store: the shared object-store engine over one block blob.
import type { StoragePipelineOptions } from "@azure/storage-blob";
import { ObjectCheckpointStore, type ObjectStoreOptions } from "../object-store.ts";
import type { AzureStateSettings } from "../settings.ts";
import { AzureBackend } from "./backend.ts";

export interface AzureStoreOptions extends ObjectStoreOptions {
  /** Merged over the derived pipeline options (tests only). */
  pipelineOptions?: StoragePipelineOptions;
}

export class AzureCheckpointStore extends ObjectCheckpointStore {
  constructor(settings: AzureStateSettings, opts: AzureStoreOptions = {}) {
    super(
      new AzureBackend(settings, opts.pipelineOptions ? { pipelineOptions: opts.pipelineOptions } : {}),
      opts,
    );
  }
}

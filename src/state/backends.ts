// The S3, GCS and Azure adapters as they are built for a store or a lease: every check of the settings
// now (offline, for `--check`), the adapter and its SDK at the first request (lazy-backend.ts). Only
// type imports of the SDKs here; their code loads through the dynamic imports below.
import type { S3ClientConfig } from "@aws-sdk/client-s3";
import type { StoragePipelineOptions } from "@azure/storage-blob";
import type { StorageOptions } from "@google-cloud/storage";
import { azureHints, gcsHints, s3Hints } from "./backend-hints.ts";
import { checkServiceAccountFile } from "./gcs-credentials.ts";
import { LazyBackend } from "./lazy-backend.ts";
import type { ObjectBackend } from "./object-backend.ts";
import type { AzureStateSettings, GcsStateSettings, S3StateSettings } from "./settings.ts";

export function s3Backend(settings: S3StateSettings, overrides: Partial<S3ClientConfig> = {}): ObjectBackend {
  return new LazyBackend(s3Hints(settings), "the S3 client (@aws-sdk/client-s3)", async () => {
    const { S3Backend } = await import("./s3-store.ts");
    return new S3Backend(settings, overrides);
  });
}

export interface GcsBackendInit {
  /** `state.gcs` (default) or `coordinate.gcs_lease`. */
  configSection?: string;
  storageOptions?: StorageOptions | undefined;
}

export function gcsBackend(settings: GcsStateSettings, init: GcsBackendInit = {}): ObjectBackend {
  const section = init.configSection ?? "state.gcs";
  if (settings.service_file) checkServiceAccountFile(settings.service_file, `${section}.service_file`);
  return new LazyBackend(gcsHints(settings, section), "the GCS client (@google-cloud/storage)", async () => {
    const { GcsBackend } = await import("./gcs-store.ts");
    return new GcsBackend(settings, { configSection: section, storageOptions: init.storageOptions });
  });
}

export interface AzureBackendInit {
  /** `state.azure` (default) or `coordinate.azure_lease`. */
  configSection?: string;
  pipelineOptions?: StoragePipelineOptions;
}

export function azureBackend(settings: AzureStateSettings, init: AzureBackendInit = {}): ObjectBackend {
  const section = init.configSection ?? "state.azure";
  return new LazyBackend(
    azureHints(settings, section),
    "the Azure Blob client (@azure/storage-blob)",
    async () => {
      const { AzureBackend } = await import("./azure/backend.ts");
      return new AzureBackend(settings, {
        configSection: section,
        ...(init.pipelineOptions ? { pipelineOptions: init.pipelineOptions } : {}),
      });
    },
  );
}

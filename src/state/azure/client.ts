// Builds the Azure Blob client for one blob from the `state.azure` / `coordinate.azure_lease` settings.
// The SDK's own retries are off (maxTries 1): a retried conditional upload must pass through our loop,
// which knows the attempt number and verifies before it calls a 412 a conflict.
import {
  AnonymousCredential,
  BlobServiceClient,
  type BlockBlobClient,
  type StoragePipelineOptions,
} from "@azure/storage-blob";
import { ConfigError, describeError } from "../../errors.ts";
import type { AzureStateSettings } from "../settings.ts";

/** Per attempt; the engine's loop bounds the attempts. */
const TRY_TIMEOUT_MS = 30_000;

/** The pipeline options every Azure client gets; exported so `doctor` can build the same client. */
export function azurePipelineOptions(): StoragePipelineOptions {
  return { retryOptions: { maxTries: 1, tryTimeoutInMs: TRY_TIMEOUT_MS } };
}

/** Where the settings sit in the config, for messages: `state.azure`, `coordinate.azure_lease`. */
export function azureBlobClient(
  settings: AzureStateSettings,
  section: string,
  overrides: StoragePipelineOptions = {},
): Promise<BlockBlobClient> {
  return serviceClient(settings, section, { ...azurePipelineOptions(), ...overrides }).then((service) =>
    service.getContainerClient(settings.container).getBlockBlobClient(settings.blob_name),
  );
}

/**
 * The storage account the settings name, without any network call or credential: from the connection
 * string's endpoint or account_url (the SDK also understands Azurite's path-style `host:port/account`).
 */
export function azureAccountName(settings: AzureStateSettings, section: string): string {
  try {
    const service =
      settings.credential === "connection_string"
        ? BlobServiceClient.fromConnectionString(connectionString(settings, section))
        : new BlobServiceClient(accountUrl(settings, section), new AnonymousCredential());
    return service.accountName;
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw invalid(section, settings.credential, err);
  }
}

async function serviceClient(
  settings: AzureStateSettings,
  section: string,
  options: StoragePipelineOptions,
): Promise<BlobServiceClient> {
  if (settings.credential === "connection_string") {
    return BlobServiceClient.fromConnectionString(connectionString(settings, section), options);
  }
  // Loaded only for the credential chain: a connection-string deployment never needs it.
  const { DefaultAzureCredential } = await import("@azure/identity");
  return new BlobServiceClient(accountUrl(settings, section), new DefaultAzureCredential(), options);
}

function connectionString(settings: AzureStateSettings, section: string): string {
  const value = settings.connection_string?.trim();
  if (!value) {
    throw new ConfigError(
      `${section}.credential is 'connection_string' but neither ${section}.connection_string nor ` +
        `${section}.connection_string_file is set; set one, or use credential: default with account_url`,
    );
  }
  return value;
}

function accountUrl(settings: AzureStateSettings, section: string): string {
  const value = settings.account_url?.trim();
  if (!value) {
    throw new ConfigError(
      `${section}.credential is 'default' but ${section}.account_url is empty; set it to ` +
        `https://<account>.blob.core.windows.net`,
    );
  }
  return value;
}

function invalid(section: string, credential: string, err: unknown): ConfigError {
  const what = credential === "connection_string" ? "connection string" : "account_url";
  return new ConfigError(
    `${section}: the ${what} cannot be used (${describeError(err)}); copy it again from the storage account`,
  );
}

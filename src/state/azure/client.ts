// Builds the Azure Blob client for one blob from the `state.azure` / `coordinate.azure_lease` settings.
// The SDK's own retries are off (maxTries 1): a retried conditional upload must pass through our loop,
// which knows the attempt number and verifies before it calls a 412 a conflict.
import {
  BlobServiceClient,
  ContainerClient,
  type BlockBlobClient,
  type StoragePipelineOptions,
} from "@azure/storage-blob";
import type { Agent } from "node:http";
import { nodeAgent } from "../../util/node-agents.ts";
import type { AzureStateSettings } from "../settings.ts";
import { accountUrl, azureBlobEndpoint, connectionString } from "./account.ts";

export { azureAccountName } from "./account.ts";

/** Per attempt; the engine's loop bounds the attempts. */
const TRY_TIMEOUT_MS = 30_000;

/** The pipeline options every Azure client gets; exported so `doctor` can build the same client. */
export function azurePipelineOptions(): StoragePipelineOptions {
  return { retryOptions: { maxTries: 1, tryTimeoutInMs: TRY_TIMEOUT_MS } };
}

/**
 * The connection to `endpoint`, direct or through the environment's proxy (node-agents.ts). storage-blob
 * hands its options on to core-rest-pipeline, whose `agent` option wins over the SDK's own reading of
 * HTTPS_PROXY / NO_PROXY (test/net/proxy.test.ts holds it to that).
 */
function connection(endpoint: string): StoragePipelineOptions {
  const options: StoragePipelineOptions & { agent: Agent } = { agent: nodeAgent(endpoint) };
  return options;
}

/** Where the settings sit in the config, for messages: `state.azure`, `coordinate.azure_lease`. */
export async function azureBlobClient(
  settings: AzureStateSettings,
  section: string,
  overrides: StoragePipelineOptions = {},
): Promise<BlockBlobClient> {
  const options = { ...connection(azureBlobEndpoint(settings, section)), ...azurePipelineOptions() };
  const service = await serviceClient(settings, section, { ...options, ...overrides });
  return service.getContainerClient(settings.container).getBlockBlobClient(settings.blob_name);
}

/** The container of `blob`, on the same credential and pipeline (listing membership leases). */
export function azureContainerClient(
  blob: BlockBlobClient,
  container: string,
  overrides: StoragePipelineOptions = {},
): ContainerClient {
  const url = new URL(blob.url);
  // The blob name may hold slashes: cut the path at the container, keeping any query (a SAS).
  const segment = `/${encodeURIComponent(container)}/`;
  url.pathname = url.pathname.slice(0, url.pathname.indexOf(segment) + segment.length - 1);
  return new ContainerClient(url.toString(), blob.credential, {
    ...connection(blob.url),
    ...azurePipelineOptions(),
    ...overrides,
  });
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

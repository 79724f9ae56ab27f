// The dead-letter folder on Azure Blob: blobs listed flat by prefix, whole-blob download, upload and
// delete-if-exists, with the checkpoint store's credentials.
import type { ContainerClient, StoragePipelineOptions } from "@azure/storage-blob";
import { azureAccountName, azureBlobClient, azureContainerClient } from "../../state/azure/client.ts";
import type { AzureStateSettings } from "../../state/settings.ts";
import type { FolderObject, ObjectFolder } from "../object-folder.ts";

export class AzureFolder implements ObjectFolder {
  readonly location: string;
  readonly #settings: AzureStateSettings;
  readonly #prefix: string;
  readonly #pipeline: StoragePipelineOptions;
  #container: Promise<ContainerClient> | undefined;

  constructor(settings: AzureStateSettings, prefix: string, pipeline: StoragePipelineOptions = {}) {
    this.#settings = settings;
    this.#prefix = prefix;
    this.#pipeline = { retryOptions: { maxTries: 3, tryTimeoutInMs: 30_000 }, ...pipeline };
    this.location = `azure://${azureAccountName(settings, "state.azure")}/${settings.container}/${prefix}`;
  }

  #c(): Promise<ContainerClient> {
    if (this.#container) return this.#container;
    // The checkpoint blob's client names the account, credential and container; the folder works beside it.
    const container = azureBlobClient(this.#settings, "state.azure", this.#pipeline).then((blob) =>
      azureContainerClient(blob, this.#settings.container, this.#pipeline),
    );
    // A failed build (a credential module that cannot load) is not cached: the next call tries again.
    container.catch(() => {
      if (this.#container === container) this.#container = undefined;
    });
    this.#container = container;
    return container;
  }

  async list(signal: AbortSignal): Promise<FolderObject[]> {
    const container = await this.#c();
    const out: FolderObject[] = [];
    for await (const blob of container.listBlobsFlat({ prefix: this.#prefix, abortSignal: signal })) {
      out.push({ name: blob.name.slice(this.#prefix.length), bytes: blob.properties.contentLength ?? 0 });
    }
    return out;
  }

  async get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    const container = await this.#c();
    try {
      return await container.getBlockBlobClient(this.#prefix + name).downloadToBuffer(0, undefined, {
        abortSignal: signal,
      });
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  async put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    const container = await this.#c();
    await container.getBlockBlobClient(this.#prefix + name).upload(bytes, bytes.byteLength, {
      abortSignal: signal,
      blobHTTPHeaders: { blobContentType: "application/x-ndjson" },
    });
  }

  async delete(name: string, signal: AbortSignal): Promise<void> {
    const container = await this.#c();
    await container.getBlockBlobClient(this.#prefix + name).deleteIfExists({ abortSignal: signal });
  }

  close(): Promise<void> {
    this.#container = undefined;
    return Promise.resolve();
  }
}

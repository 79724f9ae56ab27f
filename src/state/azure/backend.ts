// The Azure Blob adapter of the object-store engine (checkpoint store and `azure_lease` alike): one
// whole-blob GET whose body and ETag come from one response, and an upload guarded by
// `If-None-Match: *` (create) or `If-Match: <etag>`. Everything else (retries, the verify-before-
// conflict rule, fencing) is the shared engine's.
import type { BlockBlobClient, StoragePipelineOptions } from "@azure/storage-blob";
import { azureHints } from "../backend-hints.ts";
import { azureBlobEndpoint } from "./account.ts";
import type { ObjectStoreHints } from "../errors.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "../object-backend.ts";
import type { AzureStateSettings } from "../settings.ts";
import { classifyAzureError, isBlobNotFound } from "./classify.ts";
import { azureBlobClient, azureContainerClient } from "./client.ts";

export interface AzureBackendOptions {
  /** Where the settings sit in the config, for messages: `state.azure` (default), `coordinate.azure_lease`. */
  configSection?: string;
  /** Merged over the derived pipeline options (tests only). */
  pipelineOptions?: StoragePipelineOptions;
}

export class AzureBackend implements ObjectBackend {
  readonly hints: ObjectStoreHints;
  readonly #settings: AzureStateSettings;
  readonly #section: string;
  readonly #pipeline: StoragePipelineOptions;
  #client: Promise<BlockBlobClient> | undefined;

  constructor(settings: AzureStateSettings, opts: AzureBackendOptions = {}) {
    this.#settings = settings;
    this.#section = opts.configSection ?? "state.azure";
    this.#pipeline = opts.pipelineOptions ?? {};
    this.hints = {
      ...azureHints(settings, this.#section),
      endpoint: azureBlobEndpoint(settings, this.#section),
    };
  }

  #blob(): Promise<BlockBlobClient> {
    if (this.#client) return this.#client;
    const client = azureBlobClient(this.#settings, this.#section, this.#pipeline);
    // A failed build (a credential module that cannot load) is not cached: the next call tries again.
    client.catch(() => {
      if (this.#client === client) this.#client = undefined;
    });
    this.#client = client;
    return client;
  }

  async get(signal: AbortSignal): Promise<StoredObject | undefined> {
    const blob = await this.#blob();
    try {
      // maxRetryRequests 0: the SDK would otherwise resume a broken body with ranged GETs by itself; a
      // body that dies mid-transfer must instead fail this attempt, so the engine re-issues the GET.
      const resp = await blob.download(0, undefined, { abortSignal: signal, maxRetryRequests: 0 });
      const bytes = await readAll(resp.readableStreamBody, signal, this.hints.location);
      if (resp.etag === undefined) throw new Error(`download of ${this.hints.location} returned no ETag`);
      return { bytes, token: resp.etag };
    } catch (err) {
      if (isBlobNotFound(err)) return undefined;
      throw err;
    }
  }

  async delete(token: string | undefined, signal: AbortSignal): Promise<void> {
    const blob = await this.#blob();
    try {
      await blob.delete({
        abortSignal: signal,
        ...(token !== undefined ? { conditions: { ifMatch: token } } : {}),
      });
    } catch (err) {
      const status = (err as { statusCode?: unknown }).statusCode;
      if (status !== 404 && status !== 412) throw err;
    }
  }

  async list(prefix: string, signal: AbortSignal): Promise<string[]> {
    const container = azureContainerClient(await this.#blob(), this.#settings.container, this.#pipeline);
    const names: string[] = [];
    for await (const item of container.listBlobsFlat({ prefix, abortSignal: signal })) names.push(item.name);
    return names;
  }

  async put(bytes: Uint8Array, precondition: Precondition, signal: AbortSignal): Promise<string | undefined> {
    const blob = await this.#blob();
    const resp = await blob.upload(bytes, bytes.byteLength, {
      abortSignal: signal,
      conditions: precondition.kind === "create" ? { ifNoneMatch: "*" } : { ifMatch: precondition.token },
      blobHTTPHeaders: { blobContentType: "application/json" },
    });
    return resp.etag;
  }

  classify(err: unknown): ErrorClass {
    return classifyAzureError(err);
  }

  close(): Promise<void> {
    this.#client = undefined;
    return Promise.resolve();
  }
}

/** A body whose connection died mid-transfer: a dropped socket, retried like one. */
class BodyCutError extends Error {
  readonly code = "ERR_STREAM_PREMATURE_CLOSE";
}

async function readAll(
  body: NodeJS.ReadableStream | undefined,
  signal: AbortSignal,
  location: string,
): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const chunks: Buffer[] = [];
  try {
    for await (const chunk of body) chunks.push(typeof chunk === "string" ? Buffer.from(chunk) : chunk);
  } catch (err) {
    // The SDK reports a socket that closed mid-body as an AbortError although nobody cancelled; an
    // AbortError means cancellation to the retry loop, so name it for what it is.
    if (err instanceof Error && err.name === "AbortError" && !signal.aborted) {
      throw new BodyCutError(`the body of ${location} was cut off mid-transfer`, { cause: err });
    }
    throw err;
  }
  return Buffer.concat(chunks);
}

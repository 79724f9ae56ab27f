// The dead-letter folder on GCS: objects listed by prefix, whole-object download, save and delete.
import { Storage, type Bucket, type StorageOptions } from "@google-cloud/storage";
import { gcsStorageOptions } from "../../state/gcs-store.ts";
import type { GcsStateSettings } from "../../state/settings.ts";
import type { FolderObject, ObjectFolder } from "../object-folder.ts";

export class GcsFolder implements ObjectFolder {
  readonly location: string;
  readonly #prefix: string;
  readonly #bucketName: string;
  readonly #options: StorageOptions;
  #bucket: Bucket | undefined;

  constructor(settings: GcsStateSettings, prefix: string, overrides: StorageOptions = {}) {
    this.#prefix = prefix;
    this.#bucketName = settings.bucket;
    // No conditional writes here, so the library's own retries (idempotent calls only) are welcome.
    const { retryOptions: _ours, ...options } = gcsStorageOptions(settings);
    this.#options = { ...options, ...overrides };
    this.location = `gs://${settings.bucket}/${prefix}`;
  }

  #b(): Bucket {
    this.#bucket ??= new Storage(this.#options).bucket(this.#bucketName);
    return this.#bucket;
  }

  async list(signal: AbortSignal): Promise<FolderObject[]> {
    signal.throwIfAborted();
    const [files] = await this.#b().getFiles({ prefix: this.#prefix, autoPaginate: true });
    return files.map((f) => ({
      name: f.name.slice(this.#prefix.length),
      bytes: Number(f.metadata.size ?? 0),
    }));
  }

  async get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    signal.throwIfAborted();
    try {
      const [bytes] = await this.#b()
        .file(this.#prefix + name)
        .download();
      return bytes;
    } catch (err) {
      if ((err as { code?: unknown }).code === 404) return undefined;
      throw err;
    }
  }

  async put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    await this.#b()
      .file(this.#prefix + name)
      .save(Buffer.from(bytes), { resumable: false, metadata: { contentType: "application/x-ndjson" } });
  }

  async delete(name: string, signal: AbortSignal): Promise<void> {
    signal.throwIfAborted();
    await this.#b()
      .file(this.#prefix + name)
      .delete({ ignoreNotFound: true });
  }

  close(): Promise<void> {
    this.#bucket = undefined;
    return Promise.resolve();
  }
}

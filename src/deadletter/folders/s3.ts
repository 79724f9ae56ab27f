// The dead-letter folder on S3: ListObjectsV2 under the prefix, and plain GET, PUT and DELETE. No
// conditional writes here (each group has its own new key), so the SDK may retry by itself.
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { s3ClientConfig } from "../../state/s3-store.ts";
import type { S3StateSettings } from "../../state/settings.ts";
import type { FolderObject, ObjectFolder } from "../object-folder.ts";

export class S3Folder implements ObjectFolder {
  readonly location: string;
  readonly #bucket: string;
  readonly #prefix: string;
  readonly #config: S3ClientConfig;
  #client: S3Client | undefined;

  constructor(settings: S3StateSettings, prefix: string, overrides: Partial<S3ClientConfig> = {}) {
    this.#bucket = settings.bucket;
    this.#prefix = prefix;
    this.#config = { ...s3ClientConfig(settings), maxAttempts: 3, ...overrides };
    this.location = `s3://${settings.bucket}/${prefix}`;
  }

  #s3(): S3Client {
    this.#client ??= new S3Client(this.#config);
    return this.#client;
  }

  async list(signal: AbortSignal): Promise<FolderObject[]> {
    const out: FolderObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.#s3().send(
        new ListObjectsV2Command({ Bucket: this.#bucket, Prefix: this.#prefix, ContinuationToken: token }),
        { abortSignal: signal },
      );
      for (const o of page.Contents ?? []) {
        if (o.Key === undefined) continue;
        out.push({ name: o.Key.slice(this.#prefix.length), bytes: o.Size ?? 0 });
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    try {
      const resp = await this.#s3().send(
        new GetObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + name }),
        { abortSignal: signal },
      );
      return resp.Body ? await resp.Body.transformToByteArray() : new Uint8Array();
    } catch (err) {
      if ((err as { name?: string }).name === "NoSuchKey") return undefined;
      throw err;
    }
  }

  async put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    await this.#s3().send(
      new PutObjectCommand({
        Bucket: this.#bucket,
        Key: this.#prefix + name,
        Body: bytes,
        ContentType: "application/x-ndjson",
      }),
      { abortSignal: signal },
    );
  }

  async delete(name: string, signal: AbortSignal): Promise<void> {
    await this.#s3().send(new DeleteObjectCommand({ Bucket: this.#bucket, Key: this.#prefix + name }), {
      abortSignal: signal,
    });
  }

  close(): Promise<void> {
    this.#client?.destroy();
    this.#client = undefined;
    return Promise.resolve();
  }
}

// The GCS checkpoint store: the shared object-store engine over one GCS object, via @google-cloud/storage.
// Library retries are off (autoRetry false, RetryNever): the library would otherwise re-send a conditional
// upload by itself, and only our loop knows to verify a 412 that follows a lost acknowledgement.
import { createHash } from "node:crypto";
import { addAbortSignal } from "node:stream";
import { IdempotencyStrategy, Storage, type Bucket, type StorageOptions } from "@google-cloud/storage";
import { proxyFor } from "../util/proxy-env.ts";
import { gcsHints } from "./backend-hints.ts";
import type { ObjectStoreHints } from "./errors.ts";
import { checkServiceAccountFile } from "./gcs-credentials.ts";
import { withGcsDeadline } from "./gcs-deadline.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";
import { ObjectCheckpointStore, type ObjectStoreOptions } from "./object-store.ts";
import type { GcsStateSettings } from "./settings.ts";
import { isMissingBucket, isNetworkError, isTransientStatus } from "./transient.ts";

export interface GcsStoreOptions extends ObjectStoreOptions {
  /** Merged over the derived client options (tests only). */
  storageOptions?: StorageOptions;
  /** Per-request deadline in ms (tests shorten it); default GCS_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
}

/**
 * Every GCS call (download or upload) ends within this many ms, enforced by withGcsDeadline because
 * the library's own `timeout` is not; a timeout is transient, so the retry loop tries again.
 */
export const GCS_REQUEST_TIMEOUT_MS = 30_000;

/** Where the library sends requests without `endpoint_url`. */
const GCS_ENDPOINT = "https://storage.googleapis.com";

type GcsInterceptor = NonNullable<StorageOptions["interceptors_"]>[number];

type GcsRequest = ReturnType<GcsInterceptor["request"]>;

function throughProxy(proxy: URL): GcsInterceptor {
  // The library's typings give interceptors teeny-request's options; what arrives is its own request.
  return { request: (req) => ({ ...(req as unknown as GcsRequest), proxy: proxy.href }) };
}

/** The client options the settings imply; exported so `doctor` can build the same client. */
export function gcsStorageOptions(
  settings: GcsStateSettings,
  requestTimeoutMs = GCS_REQUEST_TIMEOUT_MS,
): StorageOptions {
  const endpoint = settings.endpoint_url ?? undefined;
  const keyFile = settings.service_file ?? undefined;
  const proxy = proxyFor(endpoint ?? GCS_ENDPOINT);
  return {
    // A custom endpoint (an emulator) gets no credentials unless a key file is named explicitly;
    // STORAGE_EMULATOR_HOST is honoured by the library itself the same way.
    ...(endpoint ? { apiEndpoint: endpoint, useAuthWithCustomEndpoint: keyFile !== undefined } : {}),
    // Deprecated for unvalidated files; the backend validates it first (checkServiceAccountFile).
    // eslint-disable-next-line @typescript-eslint/no-deprecated
    ...(keyFile ? { keyFilename: keyFile } : {}),
    // maxRetries: 0 alone is ignored by the library (falsy means "default"); autoRetry and RetryNever are not.
    retryOptions: { autoRetry: false, maxRetries: 0, idempotencyStrategy: IdempotencyStrategy.RetryNever },
    timeout: requestTimeoutMs,
    // The library (teeny-request) reads the proxy variables itself, HTTP_PROXY first even for https and
    // NO_PROXY as exact hosts and .domains only; a request carrying `proxy` goes through that proxy,
    // the one proxy-env.ts names for the endpoint.
    ...(proxy ? { interceptors_: [throughProxy(proxy)] } : {}),
  };
}

interface GcsErrorShape {
  code?: unknown;
  response?: { status?: number };
}

interface DownloadResponse {
  headers?: Record<string, string | string[] | undefined>;
}

export interface GcsBackendOptions {
  /** Merged over the derived client options (tests only). */
  storageOptions?: StorageOptions;
  /** Where the settings sit in the config, for messages: `state.gcs` (default), `coordinate.gcs_lease`. */
  configSection?: string;
  /** Default GCS_REQUEST_TIMEOUT_MS. */
  requestTimeoutMs?: number;
}

/** The GCS adapter of the object-store engine; the `gcs_lease` coordinator writes through it too. */
export class GcsBackend implements ObjectBackend {
  readonly hints: ObjectStoreHints;
  readonly #settings: GcsStateSettings;
  readonly #options: StorageOptions;
  readonly #timeoutMs: number;
  #bucket: Bucket | undefined;

  constructor(settings: GcsStateSettings, opts: GcsBackendOptions = {}) {
    const section = opts.configSection ?? "state.gcs";
    this.#settings = settings;
    if (settings.service_file) checkServiceAccountFile(settings.service_file, `${section}.service_file`);
    this.#timeoutMs = opts.requestTimeoutMs ?? GCS_REQUEST_TIMEOUT_MS;
    this.#options = { ...gcsStorageOptions(settings, this.#timeoutMs), ...opts.storageOptions };
    this.hints = { ...gcsHints(settings, section), endpoint: settings.endpoint_url ?? GCS_ENDPOINT };
  }

  #file() {
    this.#bucket ??= new Storage(this.#options).bucket(this.#settings.bucket);
    // A fresh File per call: the library keeps per-call state (metadata, retry flags) on it.
    return this.#bucket.file(this.#settings.object_name);
  }

  list(prefix: string, signal: AbortSignal): Promise<string[]> {
    return withGcsDeadline(
      this.#timeoutMs,
      signal,
      `listing of gs://${this.#settings.bucket}/${prefix}`,
      async () => {
        this.#bucket ??= new Storage(this.#options).bucket(this.#settings.bucket);
        const [files] = await this.#bucket.getFiles({ prefix, autoPaginate: true });
        return files.map((f) => f.name);
      },
    );
  }

  delete(token: string | undefined, signal: AbortSignal): Promise<void> {
    return withGcsDeadline(this.#timeoutMs, signal, `delete of ${this.hints.location}`, async () => {
      try {
        await this.#file().delete(token !== undefined ? { ifGenerationMatch: token } : {});
      } catch (err) {
        const code = (err as { code?: unknown }).code;
        if (code !== 404 && code !== 412) throw err;
      }
    });
  }

  get(signal: AbortSignal): Promise<StoredObject | undefined> {
    return withGcsDeadline(this.#timeoutMs, signal, `download of ${this.hints.location}`, (bound) =>
      this.#download(bound),
    );
  }

  async #download(signal: AbortSignal): Promise<StoredObject | undefined> {
    // One media GET: the body and its x-goog-generation header come from the same response, so a write
    // landing between two calls can never pair old bytes with a new generation.
    const stream = addAbortSignal(signal, this.#file().createReadStream());
    let generation: string | undefined;
    stream.on("response", (res: DownloadResponse) => {
      const header = res.headers?.["x-goog-generation"];
      generation = Array.isArray(header) ? header[0] : header;
    });
    const chunks: Buffer[] = [];
    try {
      for await (const chunk of stream) chunks.push(chunk as Buffer);
    } catch (err) {
      if (statusOf(err) === 404 && !isMissingBucket(err)) return undefined;
      throw err;
    }
    if (generation === undefined) {
      throw new Error(`download of ${this.hints.location} carried no x-goog-generation header`);
    }
    return { bytes: Buffer.concat(chunks), token: generation };
  }

  put(bytes: Uint8Array, precondition: Precondition, signal: AbortSignal): Promise<string | undefined> {
    return withGcsDeadline(this.#timeoutMs, signal, `upload to ${this.hints.location}`, () =>
      this.#upload(bytes, precondition),
    );
  }

  async #upload(bytes: Uint8Array, precondition: Precondition): Promise<string | undefined> {
    const file = this.#file();
    // save() takes no signal; put() stops waiting at the caller's abort or the deadline, so a write
    // whose term ended does not hold its caller (#17). The upload, if it still lands, names the
    // generation the next leader's claim has replaced, so it fails there.
    await file.save(Buffer.from(bytes), {
      resumable: false,
      // Client-side validation deletes the object on a mismatch, unconditionally; let the server check
      // the MD5 we send instead, which rejects a damaged upload without touching the stored version.
      validation: false,
      metadata: {
        contentType: "application/json",
        md5Hash: createHash("md5").update(bytes).digest("base64"),
      },
      preconditionOpts: { ifGenerationMatch: precondition.kind === "create" ? 0 : precondition.token },
      // Ignored by the library's current transport (see gcs-deadline.ts); kept for when it is not.
      timeout: this.#timeoutMs,
    });
    const generation = file.metadata.generation;
    return generation === undefined ? undefined : String(generation);
  }

  classify(err: unknown): ErrorClass {
    const status = statusOf(err);
    if (status === 412) return "precondition-failed";
    if (isMissingBucket(err)) return "missing-scope";
    if (status === 401 || status === 403) return "access-denied";
    if (isTransientStatus(status) || isNetworkError(err)) return "transient";
    return "other";
  }

  close(): Promise<void> {
    this.#bucket = undefined;
    return Promise.resolve();
  }
}

/** ApiError carries the HTTP status as a numeric `code`; socket errors carry a string `code`. */
function statusOf(err: unknown): number | undefined {
  const { code, response } = (err ?? {}) as GcsErrorShape;
  return typeof code === "number" ? code : response?.status;
}

export class GcsCheckpointStore extends ObjectCheckpointStore {
  constructor(settings: GcsStateSettings, opts: GcsStoreOptions = {}) {
    super(
      new GcsBackend(settings, {
        storageOptions: opts.storageOptions,
        ...(opts.requestTimeoutMs === undefined ? {} : { requestTimeoutMs: opts.requestTimeoutMs }),
      }),
      opts,
    );
  }
}

// The S3 checkpoint store: the shared object-store engine over one S3 object, via @aws-sdk/client-s3.
// SDK retries are off (`maxAttempts: 1`): a retried conditional PUT must pass through our own loop,
// which knows the attempt number and verifies before it calls a 412 a conflict.
import {
  DeleteObjectCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  type PutObjectCommandInput,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { nodeAgentOptions } from "../util/node-agents.ts";
import { s3Hints } from "./backend-hints.ts";
import type { ObjectStoreHints } from "./errors.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";
import { ObjectCheckpointStore, type ObjectStoreOptions } from "./object-store.ts";
import type { S3StateSettings } from "./settings.ts";
import { TRANSIENT_CODES, isMissingBucket, isNetworkError, isTransientStatus } from "./transient.ts";

export interface S3StoreOptions extends ObjectStoreOptions {
  /** Merged over the derived client config (tests pass static credentials; operators never need it). */
  clientConfig?: Partial<S3ClientConfig>;
  /** Per-request deadlines (tests shorten them); defaults S3_DEADLINES. */
  deadlines?: S3Deadlines;
}

/**
 * Every S3 request ends: a connection must open within `connectMs`, a response must begin within
 * `requestMs` (an error, not the SDK's default warning, hence throwOnRequestTimeout), and a socket
 * that sends nothing for `socketIdleMs` is dropped, which also bounds a body that stops mid-transfer
 * (the request deadline ends when the headers arrive). A timed-out request is transient: the
 * object-store retry loop tries again on a fresh connection.
 */
export interface S3Deadlines {
  connectMs: number;
  requestMs: number;
  socketIdleMs: number;
}

export const S3_DEADLINES: Readonly<S3Deadlines> = {
  connectMs: 10_000,
  requestMs: 30_000,
  socketIdleMs: 20_000,
};

/** The client config the settings imply; exported so `doctor` can build the same client. */
/** The URL the S3 client sends to: `endpoint_url`, or AWS's regional (or global) endpoint. */
function s3EndpointUrl(settings: S3StateSettings): string {
  if (settings.endpoint_url) return settings.endpoint_url;
  return `https://s3.${settings.region ? `${settings.region}.` : ""}amazonaws.com`;
}

export function s3ClientConfig(
  settings: S3StateSettings,
  deadlines: S3Deadlines = S3_DEADLINES,
): S3ClientConfig {
  const endpoint = settings.endpoint_url ?? undefined;
  const region = settings.region ?? (endpoint ? "us-east-1" : undefined);
  // Direct or through the environment's proxy, decided on the host the client talks to (node-agents.ts).
  const agent = nodeAgentOptions(s3EndpointUrl(settings));
  return {
    ...(region ? { region } : {}),
    ...(endpoint
      ? {
          endpoint,
          // Many S3-compatible servers reject the newer default CRC checksums; send them only when required.
          requestChecksumCalculation: "WHEN_REQUIRED" as const,
          responseChecksumValidation: "WHEN_REQUIRED" as const,
        }
      : { followRegionRedirects: true }),
    forcePathStyle: settings.force_path_style ?? Boolean(endpoint),
    maxAttempts: 1,
    requestHandler: {
      connectionTimeout: deadlines.connectMs,
      requestTimeout: deadlines.requestMs,
      throwOnRequestTimeout: true,
      socketTimeout: deadlines.socketIdleMs,
      httpAgent: agent,
      httpsAgent: agent,
    },
  };
}

interface S3ErrorShape {
  name?: string;
  $metadata?: { httpStatusCode?: number };
}

/** The S3 adapter of the object-store engine; the `s3_lease` coordinator writes through it too. */
export class S3Backend implements ObjectBackend {
  readonly hints: ObjectStoreHints;
  readonly #settings: S3StateSettings;
  readonly #config: S3ClientConfig;
  #client: S3Client | undefined;

  constructor(settings: S3StateSettings, overrides: Partial<S3ClientConfig> = {}, deadlines?: S3Deadlines) {
    this.#settings = settings;
    this.#config = { ...s3ClientConfig(settings, deadlines), ...overrides };
    this.hints = { ...s3Hints(settings), endpoint: s3EndpointUrl(settings) };
  }

  #s3(): S3Client {
    this.#client ??= new S3Client(this.#config);
    return this.#client;
  }

  async get(signal: AbortSignal): Promise<StoredObject | undefined> {
    try {
      const resp = await this.#s3().send(
        new GetObjectCommand({ Bucket: this.#settings.bucket, Key: this.#settings.key }),
        { abortSignal: signal },
      );
      // The body is read here, inside the retried unit: a stream that dies mid-transfer re-issues the GET.
      const bytes = resp.Body ? await resp.Body.transformToByteArray() : new Uint8Array();
      if (resp.ETag === undefined) throw new Error(`GetObject on ${this.hints.location} returned no ETag`);
      return { bytes, token: resp.ETag };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async put(bytes: Uint8Array, precondition: Precondition, signal: AbortSignal): Promise<string | undefined> {
    const input: PutObjectCommandInput = {
      Bucket: this.#settings.bucket,
      Key: this.#settings.key,
      Body: bytes,
      ContentType: "application/json",
      ...(precondition.kind === "create" ? { IfNoneMatch: "*" } : { IfMatch: precondition.token }),
    };
    const resp = await this.#s3().send(new PutObjectCommand(input), { abortSignal: signal });
    return resp.ETag;
  }

  async list(prefix: string, signal: AbortSignal): Promise<string[]> {
    const keys: string[] = [];
    let token: string | undefined;
    do {
      const resp = await this.#s3().send(
        new ListObjectsV2Command({
          Bucket: this.#settings.bucket,
          Prefix: prefix,
          ...(token ? { ContinuationToken: token } : {}),
        }),
        { abortSignal: signal },
      );
      for (const o of resp.Contents ?? []) if (o.Key !== undefined) keys.push(o.Key);
      token = resp.IsTruncated ? resp.NextContinuationToken : undefined;
    } while (token);
    return keys;
  }

  async delete(token: string | undefined, signal: AbortSignal): Promise<void> {
    try {
      await this.#s3().send(
        new DeleteObjectCommand({
          Bucket: this.#settings.bucket,
          Key: this.#settings.key,
          ...(token !== undefined ? { IfMatch: token } : {}),
        }),
        { abortSignal: signal },
      );
    } catch (err) {
      const verdict = this.classify(err);
      if (verdict !== "precondition-failed" && !isNotFound(err)) throw err;
    }
  }

  classify(err: unknown): ErrorClass {
    const { name, $metadata } = err as S3ErrorShape;
    const status = $metadata?.httpStatusCode;
    // A conditional PUT whose If-Match names a key that no longer exists gets 404 NoSuchKey: the object
    // moved away from the version we hold, exactly like a 412. (GET handles NoSuchKey before this.)
    if (status === 412 || name === "PreconditionFailed" || name === "NoSuchKey") return "precondition-failed";
    if (name === "ConditionalRequestConflict" || name === "OperationAborted") return "concurrent-conflict";
    if (isMissingBucket(err)) return "missing-scope";
    if (status === 401 || status === 403) return "access-denied";
    if (
      (name !== undefined && TRANSIENT_CODES.has(name)) ||
      isTransientStatus(status) ||
      isNetworkError(err)
    ) {
      return "transient";
    }
    return "other";
  }

  close(): Promise<void> {
    this.#client?.destroy();
    this.#client = undefined;
    return Promise.resolve();
  }
}

function isNotFound(err: unknown): boolean {
  const { name, $metadata } = err as S3ErrorShape;
  return name === "NoSuchKey" || ($metadata?.httpStatusCode === 404 && name !== "NoSuchBucket");
}

export class S3CheckpointStore extends ObjectCheckpointStore {
  constructor(settings: S3StateSettings, opts: S3StoreOptions = {}) {
    super(new S3Backend(settings, opts.clientConfig, opts.deadlines), opts);
  }
}

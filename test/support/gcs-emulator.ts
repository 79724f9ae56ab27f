// A GCS JSON-API emulator for the real @google-cloud/storage client: object metadata GET, media download
// (`alt=media`, with x-goog-generation and x-goog-hash headers), uploads (media, multipart, resumable)
// honouring ifGenerationMatch, DELETE, and JSON error bodies shaped the way GCS sends them.
import { createHash, randomUUID } from "node:crypto";
import { CRC32C } from "@google-cloud/storage";
import {
  InMemoryObjectEmulator,
  type EmulatorResponse,
  type InMemoryProtocol,
  type RecordedRequest,
  type RequestMatcher,
} from "./object-store-emulator.ts";

export interface GcsStoredObject {
  bytes: Buffer;
  generation: string;
  contentType: string;
  updated: Date;
}

export interface GcsWrite {
  bucket: string;
  name: string;
  bytes: Buffer;
  generation: string;
}

interface ResumableSession {
  bucket: string;
  name: string;
  query: URLSearchParams;
  contentType: string;
  chunks: Buffer[];
}

// With STORAGE_EMULATOR_HOST the library drops the `/storage/v1` prefix from non-upload paths.
const OBJECT_PATH = /^\/(?:download\/)?(?:storage\/v1\/)?b\/([^/]+)\/o\/(.+)$/;
const UPLOAD_PATH = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/;
/** objects.list (`GET .../b/<bucket>/o?prefix=`), one page. */
const LIST_PATH = /^\/(?:storage\/v1\/)?b\/([^/]+)\/o$/;

const REASONS: Record<number, string> = {
  400: "invalid",
  404: "notFound",
  408: "requestTimeout",
  409: "conflict",
  412: "conditionNotMet",
  429: "rateLimitExceeded",
  500: "backendError",
  503: "backendError",
};

class GcsProtocol implements InMemoryProtocol<GcsStoredObject, GcsWrite> {
  readonly objects = new Map<string, GcsStoredObject>();
  readonly writes: GcsWrite[] = [];
  readonly buckets: Set<string>;
  readonly #sessions = new Map<string, ResumableSession>();
  #nextGeneration = 1_700_000_000_000_001n;

  constructor(buckets: readonly string[]) {
    this.buckets = new Set(buckets);
  }

  isWrite(req: RecordedRequest): boolean {
    return req.method !== "GET" && req.method !== "HEAD";
  }

  handle(req: RecordedRequest): EmulatorResponse {
    const upload = UPLOAD_PATH.exec(req.path);
    if (upload) return this.#upload(req, upload[1]!);
    const list = LIST_PATH.exec(req.path);
    if (list && req.method === "GET") {
      const bucket = list[1]!;
      if (!this.buckets.has(bucket))
        return this.errorResponse(req, 404, "notFound", "The specified bucket does not exist.");
      const prefix = req.query.get("prefix") ?? "";
      const items = [...this.objects.entries()]
        .filter(([id]) => id.startsWith(`${bucket}/${prefix}`))
        .map(([id, o]) => resource(bucket, id.slice(bucket.length + 1), o));
      return json(200, { kind: "storage#objects", items });
    }
    const object = OBJECT_PATH.exec(req.path);
    if (!object) return this.errorResponse(req, 404, "notFound", `no route for ${req.method} ${req.path}`);
    const [, bucket, name] = object as unknown as [string, string, string];
    if (!this.buckets.has(bucket))
      return this.errorResponse(req, 404, "notFound", "The specified bucket does not exist.");
    const current = this.objects.get(`${bucket}/${name}`);
    if (req.method === "DELETE") {
      if (!current) return this.errorResponse(req, 404, "notFound", `No such object: ${bucket}/${name}`);
      const refusal = this.#checkGeneration(req, req.query, current);
      if (refusal) return refusal;
      this.objects.delete(`${bucket}/${name}`);
      return { status: 204 };
    }
    if (req.method !== "GET") return this.errorResponse(req, 405, "methodNotAllowed", "method not allowed");
    if (!current) return this.errorResponse(req, 404, "notFound", `No such object: ${bucket}/${name}`);
    const pinned = req.query.get("generation");
    if (pinned !== null && pinned !== current.generation) {
      return this.errorResponse(req, 404, "notFound", `No such object: ${bucket}/${name}#${pinned}`);
    }
    if (req.query.get("alt") === "media") {
      return {
        status: 200,
        headers: {
          "content-type": current.contentType,
          "x-goog-generation": current.generation,
          "x-goog-metageneration": "1",
          "x-goog-stored-content-encoding": "identity",
          "x-goog-stored-content-length": String(current.bytes.length),
          "x-goog-hash": `crc32c=${crc32c(current.bytes)},md5=${md5(current.bytes)}`,
        },
        body: current.bytes,
      };
    }
    return json(200, resource(bucket, name, current));
  }

  #upload(req: RecordedRequest, bucket: string): EmulatorResponse {
    if (!this.buckets.has(bucket))
      return this.errorResponse(req, 404, "notFound", "The specified bucket does not exist.");
    const uploadId = req.query.get("upload_id");
    if (uploadId !== null) return this.#resumableChunk(req, uploadId);
    const type = req.query.get("uploadType");
    if (type === "media") {
      const name = req.query.get("name") ?? "";
      return this.#finish(req, req.query, bucket, name, req.body, req.headers["content-type"] ?? "");
    }
    if (type === "multipart") {
      const parts = parseMultipart(req);
      if (!parts) return this.errorResponse(req, 400, "invalid", "malformed multipart body");
      const meta = JSON.parse(parts.metadata.toString("utf8")) as {
        name?: string;
        contentType?: string;
        md5Hash?: string;
      };
      const name = req.query.get("name") ?? meta.name ?? "";
      if (meta.md5Hash !== undefined && meta.md5Hash !== md5(parts.media)) {
        return this.errorResponse(
          req,
          400,
          "invalid",
          "Provided MD5 hash does not match the calculated MD5 hash.",
        );
      }
      return this.#finish(req, req.query, bucket, name, parts.media, meta.contentType ?? parts.mediaType);
    }
    if (type === "resumable") {
      const meta = (req.body.length ? JSON.parse(req.body.toString("utf8")) : {}) as {
        name?: string;
        contentType?: string;
      };
      const name = req.query.get("name") ?? meta.name ?? "";
      const refusal = this.#checkGeneration(req, req.query, this.objects.get(`${bucket}/${name}`));
      if (refusal) return refusal;
      const id = randomUUID();
      this.#sessions.set(id, {
        bucket,
        name,
        query: req.query,
        contentType: meta.contentType ?? "application/octet-stream",
        chunks: [],
      });
      const host = req.headers.host ?? "127.0.0.1";
      return {
        status: 200,
        headers: {
          location: `http://${host}/upload/storage/v1/b/${bucket}/o?uploadType=resumable&upload_id=${id}`,
        },
      };
    }
    return this.errorResponse(req, 400, "invalid", `unsupported uploadType ${type ?? "(none)"}`);
  }

  #resumableChunk(req: RecordedRequest, id: string): EmulatorResponse {
    const session = this.#sessions.get(id);
    if (!session) return this.errorResponse(req, 404, "notFound", "no such upload session");
    session.chunks.push(req.body);
    const received = session.chunks.reduce((n, c) => n + c.length, 0);
    // `bytes 0-*/*` is the client streaming a body of unknown size in one request: its end is the end.
    const range = req.headers["content-range"] ?? "";
    const streamed = /^bytes \d+-\*\/\*$/.test(range);
    const declared = /\/(\d+)$/.exec(range)?.[1];
    const total = streamed ? received : declared === undefined ? undefined : Number(declared);
    if (total === undefined || received < total) {
      return { status: 308, headers: received ? { range: `bytes=0-${received - 1}` } : {} };
    }
    this.#sessions.delete(id);
    const bytes = Buffer.concat(session.chunks);
    return this.#finish(req, session.query, session.bucket, session.name, bytes, session.contentType);
  }

  #finish(
    req: RecordedRequest,
    query: URLSearchParams,
    bucket: string,
    name: string,
    bytes: Buffer,
    contentType: string,
  ): EmulatorResponse {
    if (!name) return this.errorResponse(req, 400, "required", "Required parameter: name");
    const refusal = this.#checkGeneration(req, query, this.objects.get(`${bucket}/${name}`));
    if (refusal) return refusal;
    const stored = this.put(bucket, name, bytes, contentType || "application/octet-stream");
    return json(200, resource(bucket, name, stored));
  }

  #checkGeneration(
    req: RecordedRequest,
    query: URLSearchParams,
    current: GcsStoredObject | undefined,
  ): EmulatorResponse | undefined {
    const want = query.get("ifGenerationMatch");
    if (want === null) return undefined;
    const have = current?.generation ?? "0";
    if (want === have) return undefined;
    return this.errorResponse(
      req,
      412,
      "conditionNotMet",
      "At least one of the pre-conditions you specified did not hold.",
    );
  }

  putBytes(bucket: string, name: string, bytes: Buffer): string {
    return this.put(bucket, name, bytes).generation;
  }

  /** Stores an object the way a successful upload does. */
  put(bucket: string, name: string, bytes: Buffer, contentType = "application/json"): GcsStoredObject {
    const generation = String(this.#nextGeneration++);
    const stored = { bytes, generation, contentType, updated: new Date() };
    this.objects.set(`${bucket}/${name}`, stored);
    this.writes.push({ bucket, name, bytes, generation });
    return stored;
  }

  errorResponse(req: RecordedRequest, status: number, code: string, message: string): EmulatorResponse {
    if (req.method === "HEAD") return { status };
    const reason = /^[a-z]/.test(code) ? code : (REASONS[status] ?? "backendError");
    return json(status, {
      error: { code: status, message, errors: [{ domain: "global", reason, message }] },
    });
  }
}

function resource(bucket: string, name: string, o: GcsStoredObject): Record<string, string> {
  return {
    kind: "storage#object",
    id: `${bucket}/${name}/${o.generation}`,
    name,
    bucket,
    generation: o.generation,
    metageneration: "1",
    contentType: o.contentType,
    size: String(o.bytes.length),
    md5Hash: md5(o.bytes),
    crc32c: crc32c(o.bytes),
    etag: `C${o.generation}`,
    timeCreated: o.updated.toISOString(),
    updated: o.updated.toISOString(),
    storageClass: "STANDARD",
  };
}

function json(status: number, body: unknown): EmulatorResponse {
  return {
    status,
    headers: { "content-type": "application/json; charset=UTF-8" },
    body: JSON.stringify(body),
  };
}

function md5(bytes: Buffer): string {
  return createHash("md5").update(bytes).digest("base64");
}

function crc32c(bytes: Buffer): string {
  const c = new CRC32C();
  c.update(bytes);
  return c.toString();
}

/** Splits a `multipart/related` upload into its JSON metadata part and its media part. */
function parseMultipart(
  req: RecordedRequest,
): { metadata: Buffer; media: Buffer; mediaType: string } | undefined {
  const boundary = /boundary="?([^";]+)"?/.exec(req.headers["content-type"] ?? "")?.[1];
  if (!boundary) return undefined;
  const parts: { headers: string; body: Buffer }[] = [];
  const delimiter = Buffer.from(`--${boundary}`);
  let pos = req.body.indexOf(delimiter);
  while (pos >= 0) {
    const start = pos + delimiter.length;
    if (req.body.subarray(start, start + 2).toString() === "--") break;
    const next = req.body.indexOf(delimiter, start);
    if (next < 0) break;
    const part = req.body.subarray(start + 2, next - 2); // drop the CRLF after the delimiter and before the next
    const split = part.indexOf("\r\n\r\n");
    parts.push({ headers: part.subarray(0, split).toString("latin1"), body: part.subarray(split + 4) });
    pos = next;
  }
  const [metadata, media] = parts;
  if (!metadata || !media) return undefined;
  const mediaType = /content-type:\s*([^\r\n]+)/i.exec(media.headers)?.[1] ?? "application/octet-stream";
  return { metadata: metadata.body, media: media.body, mediaType };
}

export class GcsEmulator extends InMemoryObjectEmulator<GcsStoredObject, GcsWrite> {
  constructor(opts: { buckets?: readonly string[] } = {}) {
    super(new GcsProtocol(opts.buckets ?? ["state-bucket"]));
  }
}

export const gcsRequests = {
  upload: (): RequestMatcher => (r) => r.path.startsWith("/upload/"),
  download: (): RequestMatcher => (r) => r.method === "GET" && r.query.get("alt") === "media",
};

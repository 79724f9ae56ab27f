// A path-style S3 emulator for the real @aws-sdk/client-s3: GET/PUT/HEAD/DELETE on /bucket/key,
// ListObjectsV2 (`GET /bucket?list-type=2&prefix=`, one page), quoted
// MD5 ETags, If-Match / If-None-Match on PUT, and XML error bodies shaped the way S3 sends them.
import { createHash, randomUUID } from "node:crypto";
import {
  InMemoryObjectEmulator,
  type EmulatorResponse,
  type InMemoryProtocol,
  type RecordedRequest,
  type RequestMatcher,
} from "./object-store-emulator.ts";

export interface S3StoredObject {
  bytes: Buffer;
  etag: string;
  lastModified: Date;
}

export interface S3Write {
  bucket: string;
  key: string;
  bytes: Buffer;
  etag: string;
  /** The access key id that signed the PUT (one per replica in the sharding proofs); none for seeds. */
  writer?: string;
  /** When it was applied, on this process's monotonic clock (`performance.now()`), to order it against lease writes. */
  at: number;
}

class S3Protocol implements InMemoryProtocol<S3StoredObject, S3Write> {
  readonly objects = new Map<string, S3StoredObject>();
  readonly writes: S3Write[] = [];
  readonly buckets: Set<string>;

  constructor(buckets: readonly string[]) {
    this.buckets = new Set(buckets);
  }

  isWrite(req: RecordedRequest): boolean {
    return req.method === "PUT" || req.method === "DELETE";
  }

  handle(req: RecordedRequest): EmulatorResponse {
    const { bucket, key } = splitPath(req.path);
    if (!this.buckets.has(bucket)) return this.errorResponse(req, 404, "NoSuchBucket", "bucket not found");
    if (key === "" && req.method === "GET" && req.query.get("list-type") === "2") {
      return this.#list(bucket, req.query.get("prefix") ?? "");
    }
    if (key === "") return this.errorResponse(req, 400, "InvalidRequest", "only ListObjectsV2 is emulated");
    const id = `${bucket}/${key}`;
    const current = this.objects.get(id);
    switch (req.method) {
      case "GET":
      case "HEAD":
        if (!current) return this.errorResponse(req, 404, "NoSuchKey", "The specified key does not exist.");
        return {
          status: 200,
          headers: {
            etag: current.etag,
            "content-type": "application/json",
            "content-length": String(current.bytes.length),
            "last-modified": current.lastModified.toUTCString(),
          },
          ...(req.method === "GET" ? { body: current.bytes } : {}),
        };
      case "PUT": {
        const refusal = this.#checkPreconditions(req, current);
        if (refusal) return refusal;
        const etag = this.putBytes(bucket, key, decodeBody(req), signerOf(req));
        return { status: 200, headers: { etag } };
      }
      case "DELETE": {
        const ifMatch = req.headers["if-match"];
        if (typeof ifMatch === "string" && current && ifMatch !== current.etag) {
          return this.errorResponse(
            req,
            412,
            "PreconditionFailed",
            "At least one of the pre-conditions you specified did not hold",
          );
        }
        this.objects.delete(id);
        return { status: 204 };
      }
      default:
        return this.errorResponse(req, 405, "MethodNotAllowed", "method not allowed");
    }
  }

  #list(bucket: string, prefix: string): EmulatorResponse {
    const entries = [...this.objects.entries()]
      .filter(([id]) => id.startsWith(`${bucket}/${prefix}`))
      .map(([id, o]) => ({ key: id.slice(bucket.length + 1), o }))
      .sort((a, b) => (a.key < b.key ? -1 : 1));
    const contents = entries
      .map(
        ({ key, o }) =>
          `<Contents><Key>${xml(key)}</Key><LastModified>${o.lastModified.toISOString()}</LastModified>` +
          `<ETag>${xml(o.etag)}</ETag><Size>${o.bytes.length}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      )
      .join("");
    const body =
      `<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">` +
      `<Name>${xml(bucket)}</Name><Prefix>${xml(prefix)}</Prefix><KeyCount>${entries.length}</KeyCount>` +
      `<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>${contents}</ListBucketResult>`;
    return { status: 200, headers: { "content-type": "application/xml" }, body };
  }

  #checkPreconditions(
    req: RecordedRequest,
    current: S3StoredObject | undefined,
  ): EmulatorResponse | undefined {
    const ifNoneMatch = req.headers["if-none-match"];
    const ifMatch = req.headers["if-match"];
    if (ifNoneMatch === "*" && current) {
      return this.errorResponse(
        req,
        412,
        "PreconditionFailed",
        "At least one of the pre-conditions you specified did not hold",
      );
    }
    if (typeof ifMatch === "string") {
      if (!current) return this.errorResponse(req, 404, "NoSuchKey", "The specified key does not exist.");
      if (ifMatch !== current.etag) {
        return this.errorResponse(
          req,
          412,
          "PreconditionFailed",
          "At least one of the pre-conditions you specified did not hold",
        );
      }
    }
    return undefined;
  }

  /** Stores an object the way a successful PUT does; also the hook for third-party writes. */
  putBytes(bucket: string, key: string, bytes: Buffer, writer?: string): string {
    const etag = `"${createHash("md5").update(bytes).digest("hex")}"`;
    this.objects.set(`${bucket}/${key}`, { bytes, etag, lastModified: new Date() });
    this.writes.push({ bucket, key, bytes, etag, at: performance.now(), ...(writer ? { writer } : {}) });
    return etag;
  }

  errorResponse(req: RecordedRequest, status: number, code: string, message: string): EmulatorResponse {
    const headers = { "content-type": "application/xml", "x-amz-request-id": randomUUID() };
    // S3 answers HEAD errors with a status and no body at all.
    if (req.method === "HEAD") return { status, headers };
    const { bucket, key } = splitPath(req.path);
    const body =
      `<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>${code}</Code><Message>${message}</Message>` +
      `<BucketName>${bucket}</BucketName><Key>${key}</Key><RequestId>${headers["x-amz-request-id"]}</RequestId>` +
      `<HostId>emulator</HostId></Error>`;
    return { status, headers, body };
  }
}

function xml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function splitPath(path: string): { bucket: string; key: string } {
  const rest = path.replace(/^\//, "");
  const slash = rest.indexOf("/");
  return slash < 0 ? { bucket: rest, key: "" } : { bucket: rest.slice(0, slash), key: rest.slice(slash + 1) };
}

/** Undoes `Content-Encoding: aws-chunked` (used when the SDK streams a trailing checksum). */
function decodeBody(req: RecordedRequest): Buffer {
  const encoding = req.headers["content-encoding"] ?? "";
  if (!encoding.includes("aws-chunked")) return req.body;
  const out: Buffer[] = [];
  let pos = 0;
  for (;;) {
    const lineEnd = req.body.indexOf("\r\n", pos);
    if (lineEnd < 0) break;
    const size = parseInt(req.body.subarray(pos, lineEnd).toString("latin1").split(";")[0] ?? "0", 16);
    if (!size) break;
    out.push(req.body.subarray(lineEnd + 2, lineEnd + 2 + size));
    pos = lineEnd + 2 + size + 2;
  }
  return Buffer.concat(out);
}

export class S3Emulator extends InMemoryObjectEmulator<S3StoredObject, S3Write> {
  constructor(opts: { buckets?: readonly string[] } = {}) {
    super(new S3Protocol(opts.buckets ?? ["state-bucket"]));
  }
}

export const s3Requests = {
  put:
    (key?: string): RequestMatcher =>
    (r) =>
      r.method === "PUT" && (key === undefined || r.path.endsWith(`/${key}`)),
  get:
    (key?: string): RequestMatcher =>
    (r) =>
      r.method === "GET" && (key === undefined || r.path.endsWith(`/${key}`)),
};

/** The access key id of a SigV4 `Authorization` header (`… Credential=<id>/<date>/…`). */
function signerOf(req: RecordedRequest): string | undefined {
  const auth = req.headers.authorization;
  return typeof auth === "string" ? /Credential=([^/,\s]+)\//.exec(auth)?.[1] : undefined;
}

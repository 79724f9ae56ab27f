// The fault-injecting proxy in front of Azurite: the shared loopback emulator server (request log,
// write-overlap gauge, faults at the wire) with a protocol that forwards every request to the real
// Azurite and relays its answer. Azurite applies the writes; the proxy only loses, cuts or delays the
// answers, or answers an error itself, exactly where real networks and services fail.
import type { IncomingHttpHeaders } from "node:http";
import { azuriteConnectionString, type Azurite } from "./azurite.ts";
import type { AzuriteSync, SyncAnswer } from "./azurite-sync.ts";
import {
  ObjectStoreEmulatorServer,
  type EmulatorResponse,
  type ObjectStoreProtocol,
  type RecordedRequest,
} from "./object-store-emulator.ts";

/** A blob write Azurite applied (whatever the client was then told), in arrival order. */
export interface AppliedWrite {
  container: string;
  blob: string;
  bytes: Buffer;
  etag: string;
}

/** Per connection, not end to end: never relayed (the proxy re-frames every body itself). */
const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "host", "content-length"]);

/** `/account/container/blob...` → container and blob; undefined for account or container requests. */
export function blobOf(req: RecordedRequest): { container: string; blob: string } | undefined {
  const [, , container, ...rest] = req.path.split("/");
  if (!container || rest.length === 0 || req.query.has("restype")) return undefined;
  return { container, blob: rest.join("/") };
}

class ForwardingProtocol implements ObjectStoreProtocol {
  readonly writes: AppliedWrite[] = [];
  /** Set when the proxy closes: a request still held by a latency fault must not reach Azurite then. */
  closed = false;
  readonly #sync: AzuriteSync;
  readonly #target: string;

  constructor(sync: AzuriteSync, target: string) {
    this.#sync = sync;
    this.#target = target;
  }

  handle(req: RecordedRequest): EmulatorResponse {
    if (this.closed) return { status: 502, body: "the proxy is closed" };
    const query = req.query.toString();
    const answer = this.#sync.call({
      op: "raw",
      method: req.method,
      url: `${this.#target}${encodeURI(req.path)}${query ? `?${query}` : ""}`,
      headers: { ...endToEnd(req.headers), "content-length": String(req.body.length) },
      body: req.body,
    });
    const blob = blobOf(req);
    if (blob && req.method === "PUT" && answer.status === 201 && !req.query.has("comp")) {
      this.writes.push({ ...blob, bytes: req.body, etag: single(answer.headers.etag) });
    }
    return relayed(req, answer);
  }

  /** Azure's error shape: the code in `x-ms-error-code` and in an XML body, which the SDK reads. */
  errorResponse(req: RecordedRequest, status: number, code: string, message: string): EmulatorResponse {
    const body =
      req.method === "HEAD"
        ? ""
        : `<?xml version="1.0" encoding="utf-8"?><Error><Code>${code}</Code><Message>${message}</Message></Error>`;
    return { status, headers: { "content-type": "application/xml", "x-ms-error-code": code }, body };
  }

  isWrite(req: RecordedRequest): boolean {
    return (req.method === "PUT" || req.method === "DELETE") && blobOf(req) !== undefined;
  }
}

function endToEnd(headers: IncomingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && !HOP_BY_HOP.has(name)) out[name] = value;
  }
  return out;
}

function relayed(req: RecordedRequest, answer: SyncAnswer): EmulatorResponse {
  if (answer.status === 599) {
    return { status: 502, body: `the proxy could not reach Azurite: ${answer.body.toString("utf8")}` };
  }
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(answer.headers)) {
    if (!HOP_BY_HOP.has(name)) headers[name] = single(value);
  }
  // A HEAD answer names the blob's length but has no body; every other length is the body's own.
  if (req.method === "HEAD" && answer.headers["content-length"] !== undefined) {
    headers["content-length"] = single(answer.headers["content-length"]);
  }
  return { status: answer.status, headers, body: answer.body };
}

function single(value: string | string[] | undefined): string {
  return Array.isArray(value) ? value.join(", ") : (value ?? "");
}

/**
 * Azurite behind the fault proxy. Clients connect to `connectionString` (the proxy); the test reads and
 * writes blobs behind their backs, synchronously and straight to Azurite (never recorded, never faulted).
 */
export class AzuriteProxy extends ObjectStoreEmulatorServer {
  readonly #sync: AzuriteSync;
  readonly #protocol: ForwardingProtocol;
  readonly #direct: string;

  constructor(azurite: Azurite) {
    const sync = azurite.sync;
    const protocol = new ForwardingProtocol(sync, azurite.url);
    super(protocol);
    this.#sync = sync;
    this.#protocol = protocol;
    this.#direct = azuriteConnectionString(azurite.url);
  }

  /** For the clients under test: every request passes the proxy. */
  get connectionString(): string {
    return azuriteConnectionString(this.url);
  }

  /** Every blob upload Azurite applied through the proxy (faulted answers included). */
  get writes(): readonly AppliedWrite[] {
    return this.#protocol.writes;
  }

  override async close(): Promise<void> {
    this.#protocol.closed = true;
    await super.close();
  }

  createContainer(container: string): void {
    this.#expect(this.#blobCall("create-container", container, "unused"), [201], "create container");
  }

  /** The blob's bytes and ETag as Azurite holds them now; undefined when absent. */
  getObject(container: string, blob: string): { bytes: Buffer; etag: string } | undefined {
    const answer = this.#blobCall("get", container, blob);
    if (answer.status === 404) return undefined;
    this.#expect(answer, [200], `read ${blob}`);
    return { bytes: answer.body, etag: single(answer.headers.etag) };
  }

  /** An unconditional upload by someone else; returns the new ETag. */
  putObject(container: string, blob: string, bytes: Buffer | string): string {
    const answer = this.#sync.call({
      op: "put",
      connectionString: this.#direct,
      container,
      blob,
      body: Buffer.from(bytes),
    });
    this.#expect(answer, [201], `write ${blob}`);
    return single(answer.headers.etag);
  }

  deleteObject(container: string, blob: string): void {
    this.#expect(this.#blobCall("delete", container, blob), [202], `delete ${blob}`);
  }

  #blobCall(op: "get" | "delete" | "create-container", container: string, blob: string): SyncAnswer {
    return this.#sync.call({ op, connectionString: this.#direct, container, blob });
  }

  #expect(answer: SyncAnswer, ok: number[], what: string): void {
    if (!ok.includes(answer.status)) {
      throw new Error(`Azurite refused to ${what}: ${answer.status} ${answer.body.toString("utf8")}`);
    }
  }
}

// The wire-level half shared by the S3 and GCS emulators: a loopback HTTP server that records every
// request, measures how many writes overlap, and injects faults exactly where real networks fail:
// after the write was applied, mid-body, or before the request by a third-party writer.
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { setTimeout as delay } from "node:timers/promises";

export interface RecordedRequest {
  method: string;
  /** Decoded path, without the query string. */
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

export interface EmulatorResponse {
  status: number;
  headers?: Record<string, string>;
  body?: Buffer | string;
}

/** What one backend (S3 or GCS) contributes: its routes over its in-memory objects, and its error shape. */
export interface ObjectStoreProtocol {
  handle(req: RecordedRequest): EmulatorResponse;
  errorResponse(req: RecordedRequest, status: number, code: string, message: string): EmulatorResponse;
  isWrite(req: RecordedRequest): boolean;
}

export type RequestMatcher = (req: RecordedRequest) => boolean;

export type Fault =
  /** Apply the request for real, then answer an error (the acknowledgement is lost). */
  | { kind: "applied-then-error"; status: number; code: string }
  /** Apply the request for real, then destroy the socket without answering. */
  | { kind: "applied-then-reset" }
  /** Answer with the full Content-Length but only half the body, then destroy the socket. */
  | { kind: "cut-body" }
  /** Do not apply the request; answer this error. */
  | { kind: "error"; status: number; code: string; message?: string }
  /** Run a hook first (e.g. a third-party write), then handle the request normally. */
  | { kind: "before"; run: () => void }
  /** Hold the request this long, then handle it normally. */
  | { kind: "latency"; ms: number };

export const faults = {
  appliedThen500: (): Fault => ({ kind: "applied-then-error", status: 500, code: "InternalError" }),
  appliedThenReset: (): Fault => ({ kind: "applied-then-reset" }),
  cutBody: (): Fault => ({ kind: "cut-body" }),
  preconditionFailed: (): Fault => ({ kind: "error", status: 412, code: "PreconditionFailed" }),
  conditionalConflict: (): Fault => ({ kind: "error", status: 409, code: "ConditionalRequestConflict" }),
  slowDown: (): Fault => ({ kind: "error", status: 503, code: "SlowDown" }),
  tooManyRequests: (): Fault => ({ kind: "error", status: 429, code: "TooManyRequests" }),
  internalError: (): Fault => ({ kind: "error", status: 500, code: "InternalError" }),
  before: (run: () => void): Fault => ({ kind: "before", run }),
  latency: (ms: number): Fault => ({ kind: "latency", ms }),
};

interface FaultRule {
  match: RequestMatcher;
  fault: Fault;
  remaining: number;
}

export class ObjectStoreEmulatorServer {
  readonly requests: RecordedRequest[] = [];
  /** The most writes that were ever being handled at the same moment. */
  maxConcurrentWrites = 0;
  /** Every request and its outcome, for `SF2LOKI_EMULATOR_LOG=1` debugging of SDK request shapes. */
  readonly log: string[] = [];
  readonly #protocol: ObjectStoreProtocol;
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #rules: FaultRule[] = [];
  #inflightWrites = 0;
  #url = "";

  constructor(protocol: ObjectStoreProtocol) {
    this.#protocol = protocol;
    this.#server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", () => {
        const url = new URL(req.url ?? "/", "http://127.0.0.1");
        const recorded: RecordedRequest = {
          method: req.method ?? "GET",
          path: decodeURIComponent(url.pathname),
          query: url.searchParams,
          headers: req.headers,
          body: Buffer.concat(chunks),
        };
        this.requests.push(recorded);
        void this.#serve(recorded, res);
      });
    });
    this.#server.on("connection", (s) => {
      this.#sockets.add(s);
      s.on("close", () => this.#sockets.delete(s));
    });
  }

  get url(): string {
    return this.#url;
  }

  async start(): Promise<string> {
    await new Promise<void>((resolve) => this.#server.listen(0, "127.0.0.1", resolve));
    const { port } = this.#server.address() as AddressInfo;
    this.#url = `http://127.0.0.1:${port}`;
    return this.#url;
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  /** Injects a fault for the next `times` requests that match (rules are consumed in the order given). */
  inject(match: RequestMatcher, fault: Fault, times = 1): void {
    this.#rules.push({ match, fault, remaining: times });
  }

  clearFaults(): void {
    this.#rules = [];
  }

  count(match: RequestMatcher): number {
    return this.requests.filter(match).length;
  }

  #takeFault(req: RecordedRequest): Fault | undefined {
    const rule = this.#rules.find((r) => r.remaining > 0 && r.match(req));
    if (!rule) return undefined;
    rule.remaining--;
    return rule.fault;
  }

  async #serve(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const isWrite = this.#protocol.isWrite(req);
    if (isWrite) {
      this.#inflightWrites++;
      this.maxConcurrentWrites = Math.max(this.maxConcurrentWrites, this.#inflightWrites);
    }
    try {
      await this.#respond(req, res);
    } finally {
      if (isWrite) this.#inflightWrites--;
    }
  }

  async #respond(req: RecordedRequest, res: ServerResponse): Promise<void> {
    const fault = this.#takeFault(req);
    const line = `${req.method} ${req.path}?${req.query.toString()}`;
    if (process.env.SF2LOKI_EMULATOR_LOG) console.error("emulator:", line, fault?.kind ?? "");
    this.log.push(`${line} ${fault?.kind ?? ""}`.trim());
    switch (fault?.kind) {
      case undefined:
        send(res, this.#protocol.handle(req));
        return;
      case "latency":
        await delay(fault.ms);
        send(res, this.#protocol.handle(req));
        return;
      case "before":
        fault.run();
        send(res, this.#protocol.handle(req));
        return;
      case "error":
        send(res, this.#protocol.errorResponse(req, fault.status, fault.code, fault.message ?? fault.code));
        return;
      case "applied-then-error":
        this.#protocol.handle(req);
        send(res, this.#protocol.errorResponse(req, fault.status, fault.code, "injected after applying"));
        return;
      case "applied-then-reset":
        this.#protocol.handle(req);
        res.socket?.destroy();
        return;
      case "cut-body": {
        const full = this.#protocol.handle(req);
        const body = Buffer.from(full.body ?? "");
        res.writeHead(full.status, { ...full.headers, "content-length": String(body.length) });
        res.write(body.subarray(0, Math.floor(body.length / 2)), () => res.socket?.destroy());
        return;
      }
    }
  }
}

function send(res: ServerResponse, r: EmulatorResponse): void {
  const body = r.body === undefined ? Buffer.alloc(0) : Buffer.from(r.body);
  // A HEAD answer carries the object's length but no body; the protocol sets that header itself.
  res.writeHead(r.status, { "content-length": String(body.length), ...r.headers });
  res.end(body);
}

/** A protocol that keeps its objects in memory, keyed `bucket/name`, and logs every applied write. */
export interface InMemoryProtocol<O, W> extends ObjectStoreProtocol {
  readonly objects: Map<string, O>;
  readonly writes: W[];
  /** Applies a write as a successful upload would; returns the new ETag or generation. */
  putBytes(bucket: string, name: string, bytes: Buffer): string;
}

/** The test-facing side of an emulator: inspect objects and writes, and write as a third party. */
export class InMemoryObjectEmulator<O, W> extends ObjectStoreEmulatorServer {
  readonly #store: InMemoryProtocol<O, W>;

  constructor(protocol: InMemoryProtocol<O, W>) {
    super(protocol);
    this.#store = protocol;
  }

  /** Every write the emulator applied (faulted or not), plus `putObject` calls. */
  get writes(): readonly W[] {
    return this.#store.writes;
  }

  getObject(bucket: string, name: string): O | undefined {
    return this.#store.objects.get(`${bucket}/${name}`);
  }

  /** A write by someone else, bypassing HTTP: it moves the ETag or generation. */
  putObject(bucket: string, name: string, bytes: Buffer | string): string {
    return this.#store.putBytes(bucket, name, Buffer.from(bytes));
  }

  deleteObject(bucket: string, name: string): void {
    this.#store.objects.delete(`${bucket}/${name}`);
  }
}

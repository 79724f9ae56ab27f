// A loopback Kubernetes API server for the coordination.k8s.io/v1 Lease subset: GET, LIST (by an
// equality label selector), POST (create), PUT (replace with the resourceVersion precondition) and DELETE, answering Status objects the way the
// real API server does (404 NotFound, 409 AlreadyExists/Conflict, 422 Invalid). Every write is recorded.
// Faults are injected at the wire: latency, error statuses, a partition that holds one client's
// requests (by bearer token) until healed, and a barrier that releases N requests at once.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { systemClock, type Clock } from "../../src/util/clock.ts";

type Method = "GET" | "POST" | "PUT" | "DELETE";
type Json = Record<string, unknown>;

export interface RecordedLeaseWrite {
  method: Exclude<Method, "GET">;
  namespace: string;
  name: string;
  /** The bearer token of the client that sent it. */
  token: string | undefined;
  /** spec.holderIdentity and spec.leaseTransitions of the body, when it had them. */
  holder: string | null | undefined;
  transitions: number | null | undefined;
  status: number;
  /** Sent with `?dryRun=All`: answered, not persisted. */
  dryRun?: boolean;
  /** When it was answered, on this process's monotonic clock (`performance.now()`). */
  at: number;
}

interface Held {
  token: string | undefined;
  release: () => void;
  dropped: boolean;
}

const PREFIX = "/apis/coordination.k8s.io/v1/namespaces/";

export class K8sEmulator {
  readonly writes: RecordedLeaseWrite[] = [];
  /** Requests seen, in arrival order, as `METHOD token`. */
  readonly requests: string[] = [];
  /** Wait before answering each request, on the emulator's clock. */
  latencyMs = 0;
  readonly #server: Server;
  readonly #clock: Clock;
  readonly #leases = new Map<string, Json>();
  #resourceVersion = 100;
  #failures: { methods: ReadonlySet<Method>; status: number; remaining: number }[] = [];
  readonly #partitions = new Map<string, { reads: boolean }>();
  #held: Held[] = [];
  #barrier: { method: Method; count: number; waiting: (() => void)[] } | undefined;
  #url = "";

  private constructor(clock: Clock) {
    this.#clock = clock;
    this.#server = createServer((req, res) => {
      this.#handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) send(res, 500, status(500, "InternalError", String(err)));
      });
    });
  }

  static async start(opts: { clock?: Clock } = {}): Promise<K8sEmulator> {
    const emu = new K8sEmulator(opts.clock ?? systemClock);
    await new Promise<void>((resolve) => emu.#server.listen(0, "127.0.0.1", resolve));
    emu.#url = `http://127.0.0.1:${(emu.#server.address() as AddressInfo).port}`;
    return emu;
  }

  get url(): string {
    return this.#url;
  }

  /** The stored Lease, as the API would return it. */
  lease(namespace: string, name: string): Json | undefined {
    return this.#leases.get(`${namespace}/${name}`);
  }

  /** Stores `lease` as-is (null fields, even a null spec, included), with a fresh resourceVersion. */
  seed(namespace: string, name: string, lease: { spec?: Json | null; metadata?: Json }): void {
    this.#store(namespace, name, lease);
  }

  /** Deletes the Lease behind every client's back. */
  remove(namespace: string, name: string): void {
    this.#leases.delete(`${namespace}/${name}`);
  }

  /** The next `count` requests with one of `methods` are answered `status` and not applied. */
  failNext(count: number, statusCode = 500, methods: Method[] = ["POST", "PUT"]): void {
    this.#failures.push({ methods: new Set(methods), status: statusCode, remaining: count });
  }

  /** Holds this client's writes (and reads too, if asked) until `heal`; abandoned ones are dropped. */
  partition(token: string, opts: { reads?: boolean } = {}): void {
    this.#partitions.set(token, { reads: opts.reads ?? false });
  }

  heal(token: string): void {
    this.#partitions.delete(token);
    const [mine, others] = partitionBy(this.#held, (h) => h.token === token);
    this.#held = others;
    for (const h of mine) if (!h.dropped) h.release();
  }

  /** Requests being held by a partition right now (abandoned ones excluded). */
  held(token?: string): number {
    return this.#held.filter((h) => !h.dropped && (token === undefined || h.token === token)).length;
  }

  /** Holds `method` requests until `count` of them are waiting, then lets them all through together. */
  barrier(method: Method, count: number): void {
    this.#barrier = { method, count, waiting: [] };
  }

  /** Forgets every Lease, record and fault (held requests are dropped), for the next test. */
  reset(): void {
    for (const h of this.#held) h.dropped = true;
    this.#held = [];
    for (const release of this.#barrier?.waiting ?? []) release();
    this.#barrier = undefined;
    this.#partitions.clear();
    this.#failures = [];
    this.#leases.clear();
    this.writes.length = 0;
    this.requests.length = 0;
    this.latencyMs = 0;
  }

  async close(): Promise<void> {
    for (const h of this.#held) h.dropped = true;
    this.#held = [];
    for (const release of this.#barrier?.waiting ?? []) release();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? "GET") as Method;
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? "")?.[1];
    const body = await readBody(req);
    this.requests.push(`${method} ${token ?? "-"}`);
    const url = new URL(req.url ?? "/", "http://x");
    const route = parseRoute(url.pathname);
    // `?dryRun=All`: validated, authorised and answered as usual, never persisted (kubectl --dry-run=server).
    const dryRun = url.searchParams.get("dryRun") === "All";
    if (!route) {
      send(res, 404, status(404, "NotFound", `the server could not find ${req.url ?? ""}`));
      return;
    }
    if (!token) {
      send(res, 401, status(401, "Unauthorized", "Unauthorized"));
      return;
    }

    const partition = this.#partitions.get(token);
    if (partition && (method !== "GET" || partition.reads)) {
      if (!(await this.#hold(token, res))) return;
    }
    if (this.#barrier?.method === method) await this.#awaitBarrier(this.#barrier);
    if (this.latencyMs > 0) await this.#clock.sleep(this.latencyMs);

    let result: [number, Json];
    const failure = this.#failures.find((f) => f.remaining > 0 && f.methods.has(method));
    if (failure) {
      failure.remaining--;
      result = [failure.status, status(failure.status, "InternalError", "injected failure")];
    } else if (dryRun) {
      const before = new Map(this.#leases);
      result = this.#apply(method, route, body, "");
      this.#leases.clear();
      for (const [k, v] of before) this.#leases.set(k, v);
    } else {
      result = this.#apply(method, route, body, url.searchParams.get("labelSelector") ?? "");
    }
    if (method !== "GET") {
      const name = route.name ?? str((body.metadata as Json | undefined)?.name) ?? "";
      const spec = body.spec as Json | null | undefined;
      this.writes.push({
        method,
        namespace: route.namespace,
        name,
        token,
        holder: spec?.holderIdentity as string | null | undefined,
        transitions: spec?.leaseTransitions as number | null | undefined,
        status: result[0],
        ...(dryRun ? { dryRun: true } : {}),
        at: performance.now(),
      });
    }
    send(res, ...result);
  }

  #apply(method: Method, route: Route, body: Json, labelSelector: string): [number, Json] {
    const { namespace } = route;
    if (method === "GET" && route.name === undefined) return [200, this.#list(namespace, labelSelector)];
    if (method === "POST") {
      if (route.name !== undefined) return [405, status(405, "MethodNotAllowed", "POST to a named Lease")];
      const name = str((body.metadata as Json | undefined)?.name);
      if (!name) return [422, status(422, "Invalid", "metadata.name: Required value")];
      if (this.#leases.has(`${namespace}/${name}`)) {
        return [
          409,
          status(409, "AlreadyExists", `leases.coordination.k8s.io "${name}" already exists`, name),
        ];
      }
      return [201, this.#store(namespace, name, body)];
    }
    const name = route.name;
    if (name === undefined) return [405, status(405, "MethodNotAllowed", `${method} on the collection`)];
    const key = `${namespace}/${name}`;
    const current = this.#leases.get(key);
    if (!current)
      return [404, status(404, "NotFound", `leases.coordination.k8s.io "${name}" not found`, name)];
    if (method === "GET") return [200, current];
    if (method === "DELETE") {
      const pre = str((body.preconditions as Json | undefined)?.resourceVersion);
      if (pre !== undefined && pre !== str((current.metadata as Json).resourceVersion)) {
        return [
          409,
          status(409, "Conflict", `Precondition failed: ResourceVersion in precondition: ${pre}`, name),
        ];
      }
      this.#leases.delete(key);
      return [200, { kind: "Status", apiVersion: "v1", metadata: {}, status: "Success" }];
    }
    const expected = str((body.metadata as Json | undefined)?.resourceVersion);
    if (!expected) {
      return [
        422,
        status(422, "Invalid", "metadata.resourceVersion: Invalid value: must be specified for an update"),
      ];
    }
    if (expected !== str((current.metadata as Json).resourceVersion)) {
      return [
        409,
        status(
          409,
          "Conflict",
          `Operation cannot be fulfilled on leases.coordination.k8s.io "${name}": the object has been modified; ` +
            `please apply your changes to the latest version and try again`,
          name,
        ),
      ];
    }
    return [200, this.#store(namespace, name, body, current)];
  }

  /** A LeaseList; the selector supports `k=v` terms joined by commas, as sharding sends. */
  #list(namespace: string, labelSelector: string): Json {
    const terms = labelSelector
      .split(",")
      .filter((t) => t !== "")
      .map((t) => t.split("=") as [string, string]);
    const items = [...this.#leases.entries()]
      .filter(([key]) => key.startsWith(`${namespace}/`))
      .map(([, lease]) => lease)
      .filter((lease) => {
        const labels = ((lease.metadata as Json).labels ?? {}) as Record<string, string>;
        return terms.every(([k, v]) => labels[k] === v);
      });
    return {
      kind: "LeaseList",
      apiVersion: "coordination.k8s.io/v1",
      metadata: { resourceVersion: String(this.#resourceVersion) },
      items,
    };
  }

  #store(namespace: string, name: string, body: Json, previous?: Json): Json {
    const prevMeta = (previous?.metadata ?? {}) as Json;
    const stored: Json = {
      apiVersion: "coordination.k8s.io/v1",
      kind: "Lease",
      metadata: {
        ...((body.metadata ?? {}) as Json),
        name,
        namespace,
        uid: prevMeta.uid ?? `uid-${name}-${this.#resourceVersion}`,
        creationTimestamp: prevMeta.creationTimestamp ?? new Date(this.#clock.now()).toISOString(),
        resourceVersion: String(++this.#resourceVersion),
      },
      spec: "spec" in body ? body.spec : {},
    };
    this.#leases.set(`${namespace}/${name}`, stored);
    return stored;
  }

  /** Resolves true when healed, false when the client gave up (the request is then never applied). */
  #hold(token: string, res: ServerResponse): Promise<boolean> {
    return new Promise((resolve) => {
      const held: Held = {
        token,
        dropped: false,
        release: () => {
          resolve(true);
        },
      };
      res.once("close", () => {
        if (!res.writableEnded) {
          held.dropped = true;
          resolve(false);
        }
      });
      this.#held.push(held);
    });
  }

  #awaitBarrier(barrier: { count: number; waiting: (() => void)[] }): Promise<void> {
    return new Promise((resolve) => {
      barrier.waiting.push(resolve);
      if (barrier.waiting.length >= barrier.count) {
        this.#barrier = undefined;
        for (const release of barrier.waiting) release();
      }
    });
  }
}

interface Route {
  namespace: string;
  name: string | undefined;
}

function parseRoute(path: string): Route | undefined {
  if (!path.startsWith(PREFIX)) return undefined;
  const parts = path.slice(PREFIX.length).split("/").map(decodeURIComponent);
  if (parts[1] !== "leases" || !parts[0] || parts.length > 3) return undefined;
  return { namespace: parts[0], name: parts[2] || undefined };
}

function status(code: number, reason: string, message: string, name?: string): Json {
  return {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    ...(name !== undefined && { details: { name, group: "coordination.k8s.io", kind: "leases" } }),
    code,
  };
}

function send(res: ServerResponse, code: number, body: Json): void {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

async function readBody(req: IncomingMessage): Promise<Json> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  if (chunks.length === 0) return {};
  return JSON.parse(Buffer.concat(chunks).toString("utf8")) as Json;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" ? v : undefined;
}

function partitionBy<T>(items: T[], pred: (item: T) => boolean): [T[], T[]] {
  return [items.filter(pred), items.filter((i) => !pred(i))];
}

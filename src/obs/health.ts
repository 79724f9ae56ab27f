// /healthz, /readyz, /statusz and /metrics on service.health_addr. Liveness degrades only for a wedged
// process (work pending, nothing attempted for service.watchdog.liveness_timeout): outages are retried
// in place and a restart would not help them. Readiness says whether this replica is the working leader.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

export interface Readiness {
  /** Undefined when ready; otherwise `not ready` or `standby`. */
  notReadyReason(): string | undefined;
  /** The first degradation (e.g. Loki failing too long), evaluated per request so it self-heals. */
  degradation(): string | undefined;
}

export interface HealthServerOptions {
  addr: string;
  readiness: Readiness;
  status: () => unknown;
  /** Undefined while live; otherwise why a restart is needed. */
  liveness?: () => string | undefined;
  metrics: (req: IncomingMessage, res: ServerResponse) => void;
}

export interface HealthServer {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** `:8080` → all interfaces; `127.0.0.1:0` → an ephemeral loopback port. */
export function parseAddr(addr: string): { host: string | undefined; port: number } {
  const i = addr.lastIndexOf(":");
  const host = i > 0 ? addr.slice(0, i).replace(/^\[|\]$/g, "") : undefined;
  const port = Number(addr.slice(i + 1));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new Error(`invalid health_addr '${addr}'`);
  return { host, port };
}

function text(res: ServerResponse, status: number, body: string): void {
  res.writeHead(status, {
    "content-length": Buffer.byteLength(body),
    connection: "close",
    "content-type": "text/plain",
  });
  res.end(body);
}

export async function startHealthServer(opts: HealthServerOptions): Promise<HealthServer> {
  const server: Server = createServer({ requestTimeout: 5000, headersTimeout: 5000 }, (req, res) => {
    const path = req.url ?? "/";
    switch (path) {
      case "/healthz": {
        const wedged = opts.liveness?.();
        text(res, wedged === undefined ? 200 : 503, wedged ?? "ok");
        return;
      }
      case "/readyz": {
        const notReady = opts.readiness.notReadyReason();
        if (notReady !== undefined) {
          text(res, 503, notReady);
          return;
        }
        const degraded = opts.readiness.degradation();
        if (degraded !== undefined) {
          text(res, 503, degraded);
          return;
        }
        text(res, 200, "ready");
        return;
      }
      case "/statusz": {
        const body = JSON.stringify(
          opts.status(),
          (_k, v: unknown) => (typeof v === "bigint" ? v.toString() : v),
          2,
        );
        res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
        res.end(body);
        return;
      }
      case "/metrics":
        opts.metrics(req, res);
        return;
      default:
        text(res, 404, "not found");
    }
  });
  const { host, port } = parseAddr(opts.addr);
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    port: bound,
    url: `http://${host && host !== "0.0.0.0" && host !== "::" ? host : "127.0.0.1"}:${bound}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

// A forwarding HTTP proxy on 127.0.0.1 for the proxy tests, the way a corporate proxy behaves: CONNECT
// is answered 200 and piped to the target (https, or anything a client tunnels), and an absolute-URI
// request (plain http) is forwarded with node:http and its answer piped back. It records every request
// by the target's host:port as the client named it, so a test can ask "did this client's traffic go
// through here" and "did a NO_PROXY host never come here".
import { createServer, request, type IncomingHttpHeaders, type Server } from "node:http";
import { connect, type AddressInfo, type Socket } from "node:net";

export interface ProxiedRequest {
  /** `CONNECT`, or the forwarded request's method. */
  readonly method: string;
  /** `host:port` as the client asked for it (`localhost:8080`, `127.0.0.1:443`). */
  readonly target: string;
  /** The forwarded request's path; "" for a CONNECT (the tunnel's bytes are not ours to read). */
  readonly path: string;
  readonly proxyAuthorization: string | undefined;
}

/** Headers that concern the hop to the proxy, not the target. */
const HOP_BY_HOP = new Set(["proxy-authorization", "proxy-connection", "connection", "keep-alive"]);

function forwardable(headers: IncomingHttpHeaders): IncomingHttpHeaders {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !HOP_BY_HOP.has(name)));
}

export class ForwardProxy {
  readonly requests: ProxiedRequest[] = [];
  readonly #server: Server;
  readonly #sockets = new Set<Socket>();
  #url = "";

  private constructor() {
    this.#server = createServer((req, res) => {
      let target: URL;
      try {
        target = new URL(req.url ?? "");
      } catch {
        res.writeHead(400).end("a proxy takes absolute-URI requests only");
        return;
      }
      const port = target.port || "80";
      this.#record(req.method ?? "GET", `${target.hostname}:${port}`, target.pathname, req.headers);
      const upstream = request(
        {
          host: target.hostname,
          port,
          method: req.method,
          path: `${target.pathname}${target.search}`,
          headers: forwardable(req.headers),
          agent: false,
        },
        (answer) => {
          res.writeHead(answer.statusCode ?? 502, answer.headers);
          answer.pipe(res);
        },
      );
      upstream.on("error", () => res.destroy());
      req.pipe(upstream);
    });
    this.#server.on("connect", (req, client: Socket, head: Buffer) => {
      const target = req.url ?? "";
      this.#record("CONNECT", target, "", req.headers);
      const [host, port] = [
        target.slice(0, target.lastIndexOf(":")),
        target.slice(target.lastIndexOf(":") + 1),
      ];
      const upstream = connect(Number(port), host.replace(/^\[(.*)\]$/, "$1"), () => {
        client.write("HTTP/1.1 200 Connection Established\r\n\r\n");
        upstream.write(head);
        upstream.pipe(client);
        client.pipe(upstream);
      });
      this.#track(upstream);
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
    });
    this.#server.on("connection", (s: Socket) => {
      this.#track(s);
    });
  }

  static async start(): Promise<ForwardProxy> {
    const proxy = new ForwardProxy();
    await new Promise<void>((resolve) => proxy.#server.listen(0, "127.0.0.1", resolve));
    proxy.#url = `http://127.0.0.1:${(proxy.#server.address() as AddressInfo).port}`;
    return proxy;
  }

  /** `http://127.0.0.1:<port>`. */
  get url(): string {
    return this.#url;
  }

  /** What passed through on the way to `origin` (`http://127.0.0.1:9000`: its host and port). */
  to(origin: string): ProxiedRequest[] {
    const url = new URL(origin);
    const target = `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;
    return this.requests.filter((r) => r.target === target);
  }

  /** Every request for a host (any port): what a NO_PROXY host must never show. */
  toHost(hostname: string): ProxiedRequest[] {
    return this.requests.filter((r) => r.target.slice(0, r.target.lastIndexOf(":")) === hostname);
  }

  async close(): Promise<void> {
    for (const s of this.#sockets) s.destroy();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }

  #record(method: string, target: string, path: string, headers: IncomingHttpHeaders): void {
    this.requests.push({ method, target, path, proxyAuthorization: headers["proxy-authorization"] });
  }

  #track(s: Socket): void {
    this.#sockets.add(s);
    s.on("close", () => this.#sockets.delete(s));
  }
}

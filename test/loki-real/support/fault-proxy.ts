// A loopback HTTP proxy in front of the real Loki, for faults Loki itself cannot be asked to make (its
// read path down, a push failing) and for counting the requests a case made.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";

export interface FaultProxy {
  url: string;
  /** Pushes still to answer 503. */
  failPushes: number;
  refuseQueries: boolean;
  queries: number;
  /** Push requests seen, refused ones included. */
  pushes: number;
}

/**
 * A loopback HTTP proxy in front of Loki: answers 503 to the first `failPushes` pushes, and to every
 * query while `refuseQueries`; forwards everything else, counting the pushes it saw.
 */
export async function faultProxy(t: TestContext, target: string): Promise<FaultProxy> {
  const state: FaultProxy = { url: "", failPushes: 0, refuseQueries: false, queries: 0, pushes: 0 };
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      const isQuery = (req.url ?? "").startsWith("/loki/api/v1/query");
      if (isQuery) state.queries++;
      else state.pushes++;
      if ((isQuery && state.refuseQueries) || (!isQuery && state.failPushes > 0)) {
        if (!isQuery) state.failPushes--;
        res.writeHead(503).end("proxy: refused\n");
        return;
      }
      const headers: Record<string, string> = {};
      for (const [k, v] of Object.entries(req.headers))
        if (typeof v === "string" && k !== "host") headers[k] = v;
      fetch(`${target}${req.url ?? "/"}`, {
        method: req.method ?? "GET",
        headers,
        ...(chunks.length > 0 ? { body: Buffer.concat(chunks) } : {}),
      }).then(
        async (r) => {
          res.writeHead(r.status, { "content-type": r.headers.get("content-type") ?? "text/plain" });
          res.end(Buffer.from(await r.arrayBuffer()));
        },
        () => res.writeHead(502).end(),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  );
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return state;
}

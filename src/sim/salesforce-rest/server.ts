// The REST simulator on its own loopback port, for tests and the benchmark.
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { createSimRest, type SimRestHandler, type SimRestOptions } from "./handler.ts";

export interface SimRestServer {
  /** `http://127.0.0.1:<port>`: what an AccessToken's instanceUrl points at. */
  instanceUrl: string;
  sim: SimRestHandler;
  faults: SimRestHandler["faults"];
  stats: SimRestHandler["stats"];
  data: SimRestHandler["data"];
  stop(): Promise<void>;
}

export async function startSimRest(opts: SimRestOptions = {}): Promise<SimRestServer> {
  const sim = createSimRest(opts);
  // A URI just past 16 KiB must reach the handler (and get Salesforce's 414), not Node's 431.
  const server = createServer({ maxHeaderSize: 64 * 1024 }, (req, res) => {
    if (!sim(req, res)) {
      res.writeHead(404, { "content-type": "text/plain" });
      res.end("not found");
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    instanceUrl: `http://127.0.0.1:${port}`,
    sim,
    faults: sim.faults,
    stats: sim.stats,
    data: sim.data,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
}

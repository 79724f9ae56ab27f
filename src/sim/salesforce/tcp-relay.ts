// A loopback TCP relay in front of the simulated Pub/Sub server, so a fault can reset the client's
// connection the way a load balancer or NAT drop does (grpc-js servers cannot RST one stream).
import { connect, createServer, type Server, type Socket } from "node:net";
import type { AddressInfo } from "node:net";

export class TcpRelay {
  readonly #server: Server;
  readonly #pairs = new Set<[Socket, Socket]>();

  constructor(targetPort: number) {
    this.#server = createServer((client) => {
      const upstream = connect(targetPort, "127.0.0.1");
      const pair: [Socket, Socket] = [client, upstream];
      this.#pairs.add(pair);
      const drop = (): void => {
        this.#pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on("error", drop).on("close", drop);
      upstream.on("error", drop).on("close", drop);
      client.pipe(upstream);
      upstream.pipe(client);
    });
  }

  async listen(): Promise<number> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once("error", reject);
      this.#server.listen(0, "127.0.0.1", resolve);
    });
    return (this.#server.address() as AddressInfo).port;
  }

  /** TCP RST to every client connection; returns how many were cut. */
  resetAll(): number {
    const pairs = [...this.#pairs];
    this.#pairs.clear();
    for (const [client, upstream] of pairs) {
      client.resetAndDestroy();
      upstream.destroy();
    }
    return pairs.length;
  }

  async close(): Promise<void> {
    // Plain destroy, not a reset: resetting a half-closed socket leaves a handle libuv never closes,
    // and the process spins at exit.
    for (const [client, upstream] of this.#pairs) {
      client.destroy();
      upstream.destroy();
    }
    this.#pairs.clear();
    await new Promise<void>((resolve) =>
      this.#server.close(() => {
        resolve();
      }),
    );
  }
}

// HTTPS in front of any plaintext loopback server (a Loki receiver, the simulated org, an OTLP
// receiver): a TLS listener on 127.0.0.1 with the test CA's server certificate (test/fixtures/tls,
// good for 127.0.0.1 and localhost) that pipes each decrypted connection to the target. With
// `clientCa`, it also demands a client certificate that CA signed (mutual TLS).
import { readFileSync } from "node:fs";
import { connect, type AddressInfo, type Socket } from "node:net";
import { createServer, type TLSSocket } from "node:tls";

const dir = new URL("../fixtures/tls/", import.meta.url).pathname;

/** The fixture files, by role: what a config's `tls:` keys point at. */
export const TLS_FILES = {
  ca: `${dir}ca.pem`,
  serverCert: `${dir}server.pem`,
  serverKey: `${dir}server-key.pem`,
  clientCert: `${dir}client.pem`,
  clientKey: `${dir}client-key.pem`,
};

export interface TlsFront {
  /** `https://127.0.0.1:<port>`. */
  readonly url: string;
  /** TLS handshakes that failed (an untrusted certificate either way, a missing client certificate). */
  readonly refused: () => number;
  close(): Promise<void>;
}

export async function startTlsFront(target: string, opts: { clientCa?: boolean } = {}): Promise<TlsFront> {
  const to = new URL(target);
  const sockets = new Set<Socket>();
  let refused = 0;
  const server = createServer(
    {
      cert: readFileSync(TLS_FILES.serverCert),
      key: readFileSync(TLS_FILES.serverKey),
      ...(opts.clientCa
        ? { ca: readFileSync(TLS_FILES.ca), requestCert: true, rejectUnauthorized: true }
        : {}),
    },
    (client: TLSSocket) => {
      const upstream = connect(Number(to.port), to.hostname);
      sockets.add(upstream);
      upstream.on("close", () => sockets.delete(upstream));
      upstream.on("error", () => client.destroy());
      client.on("error", () => upstream.destroy());
      client.pipe(upstream).pipe(client);
    },
  );
  server.on("tlsClientError", () => refused++);
  server.on("connection", (s: Socket) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    refused: () => refused,
    close: async () => {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}

// A test server on 127.0.0.1 at a port the OS chooses, closed when the test ends: never a fixed port,
// never another address.
import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { TestContext } from "node:test";

/** Listens `server` on loopback, closes it after `t`, and gives its base URL. */
export async function listenLoopback(t: TestContext, server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () =>
      new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// One look at a proxy, for `doctor` and for a client whose own error cannot tell a proxy's fault from
// the server's (grpc-js says only "No connection established"): open a socket to the proxy and, for an
// https target, ask it for the tunnel the client would ask for, with the same credentials.
import { connect, type Socket } from "node:net";
import { connectFailureWords } from "./proxy-fault.ts";

export type ProxyProbe =
  { ok: true; ms: number; tunnelled: boolean } | { ok: false; what: string; status?: number };

const STATUS_LINE = /^HTTP\/1\.[01] (\d{3})/;

/**
 * Connects to `proxy` within `timeoutMs` and, when `tunnelTo` (`host:port`) is given, sends CONNECT for
 * it and reads the status line. `what` completes "proxy host:port (from VAR) …".
 */
export function probeProxy(proxy: URL, tunnelTo: string | undefined, timeoutMs: number): Promise<ProxyProbe> {
  const started = performance.now();
  const port = Number(proxy.port || (proxy.protocol === "https:" ? 443 : 80));
  const host = proxy.hostname.replace(/^\[|\]$/g, "");
  return new Promise((resolve) => {
    let settled = false;
    let socket: Socket | undefined = undefined;
    const done = (result: ProxyProbe): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket?.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => {
      done({ ok: false, what: `did not answer within ${timeoutMs} ms` });
    }, timeoutMs);
    socket = connect({ host, port }, () => {
      if (tunnelTo === undefined) {
        done({ ok: true, ms: Math.round(performance.now() - started), tunnelled: false });
        return;
      }
      const auth = proxy.username
        ? `Proxy-Authorization: Basic ${Buffer.from(`${decodeURIComponent(proxy.username)}:${decodeURIComponent(proxy.password)}`).toString("base64")}\r\n`
        : "";
      socket!.write(`CONNECT ${tunnelTo} HTTP/1.1\r\nHost: ${tunnelTo}\r\n${auth}\r\n`);
    });
    let head = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      head += chunk;
      if (!head.includes("\r\n")) return;
      const status = Number(STATUS_LINE.exec(head)?.[1] ?? 0);
      if (status === 200) done({ ok: true, ms: Math.round(performance.now() - started), tunnelled: true });
      else if (status === 407)
        done({
          ok: false,
          status,
          what: "refused the credentials (HTTP 407 to CONNECT): check the user and password in the proxy URL",
        });
      else if (status === 0)
        done({
          ok: false,
          what: `answered CONNECT with something not HTTP (${JSON.stringify(head.slice(0, 40))})`,
        });
      else
        done({
          ok: false,
          status,
          what: `would not open a tunnel to ${tunnelTo} (it answered HTTP ${status} to CONNECT)`,
        });
    });
    socket.on("error", (err: NodeJS.ErrnoException) => {
      done({ ok: false, what: connectFailureWords(err.code) ?? `failed: ${err.message}` });
    });
    socket.on("close", () => {
      done({ ok: false, what: "closed the connection before answering CONNECT" });
    });
  });
}

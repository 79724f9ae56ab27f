// When a request goes through the proxy the environment names, its only socket is to that proxy: a
// refused, unresolvable or silent connection is the proxy's, not the server's, and an operator told
// "check network access to https://login.salesforce.com" looks at the wrong machine. Every client's
// error builder asks here, with the URL it was reaching, for the words that name what failed: the
// proxy and the variable that chose it, or the server itself when it was reached directly.
import { describeError } from "../errors.ts";
import { processProxyEnv, proxyRouteFor, type ProxyEnv } from "./proxy-env.ts";
import { withoutUserinfoIn } from "./userinfo.ts";

/** Socket-level failures (Node's and undici's codes): nothing was said over HTTP yet. */
const CONNECT_FAILURES: Record<string, string> = {
  ECONNREFUSED: "refused the connection",
  ENOTFOUND: "does not resolve",
  EAI_AGAIN: "does not resolve (DNS did not answer)",
  ETIMEDOUT: "did not accept the connection in time",
  UND_ERR_CONNECT_TIMEOUT: "did not accept the connection in time",
  EHOSTUNREACH: "is unreachable (no route to host)",
  ENETUNREACH: "is unreachable (network unreachable)",
  ECONNRESET: "reset the connection",
  EPIPE: "closed the connection",
  UND_ERR_SOCKET: "closed the connection",
};

/**
 * Cut after the socket was up: through a tunnel that may be the proxy or the server behind it, so a
 * request through a proxy is told so rather than blamed on either.
 */
const CUT_CODES: ReadonlySet<string> = new Set(["ECONNRESET", "EPIPE", "UND_ERR_SOCKET"]);

/** `refused the connection` for ECONNREFUSED, and so on; undefined for a code not of the socket. */
export function connectFailureWords(code: string | undefined): string | undefined {
  return code === undefined ? undefined : CONNECT_FAILURES[code];
}

/** A proxy's answer to CONNECT that was not 200, as undici, Node's http.Agent and grpc-js word it. */
const TUNNEL_REFUSALS = [
  /Proxy response \((\d{3})\) !== 200 when HTTP Tunneling/,
  /Failed to establish tunnel to \S+ via \S+: HTTP\/1\.[01] (\d{3})/,
  /Bad proxy response[^\d]*(\d{3})/i,
  /proxy (?:connection )?failed with status (\d{3})/i,
];

/** grpc-js keeps only the text of a socket failure in its status details. */
const CODE_IN_TEXT = new RegExp(`\\b(${Object.keys(CONNECT_FAILURES).join("|")})\\b`);

/** Every error in `err`'s chain: causes and the members of an AggregateError (undici's dual-stack). */
function* chain(err: unknown, depth = 0): Generator {
  if (err === undefined || err === null || depth > 8) return;
  yield err;
  if (err instanceof AggregateError) for (const e of err.errors) yield* chain(e, depth + 1);
  if (err instanceof Error) yield* chain(err.cause, depth + 1);
}

function textOf(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === "object" && e !== null && "details" in e) return String(e.details);
  return String(e);
}

/** What went wrong at the socket, or the proxy's CONNECT status, in `err`'s chain; undefined: neither. */
function socketFailure(err: unknown): { what: string; code: string } | { tunnelStatus: number } | undefined {
  for (const e of chain(err)) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && CONNECT_FAILURES[code]) return { what: CONNECT_FAILURES[code], code };
    const text = textOf(e);
    for (const pattern of TUNNEL_REFUSALS) {
      const m = pattern.exec(text);
      if (m) return { tunnelStatus: Number(m[1]) };
    }
    const named = CODE_IN_TEXT.exec(text);
    if (named) return { what: CONNECT_FAILURES[named[1]!]!, code: named[1]! };
  }
  return undefined;
}

const hostPort = (url: URL): string => url.host || url.hostname;

/**
 * `proxy 10.0.0.9:3128 (from HTTPS_PROXY) refused the connection` when `err` is a failure to reach
 * (or tunnel through) the proxy a request to `target` is routed through; undefined when the request
 * went direct or failed otherwise (an HTTP answer of the server's own is never the proxy's).
 */
export function proxyFault(
  err: unknown,
  target: string | URL,
  env: ProxyEnv = processProxyEnv(),
): string | undefined {
  let url: URL;
  try {
    url = typeof target === "string" ? new URL(target) : target;
  } catch {
    return undefined;
  }
  const route = proxyRouteFor(url, env);
  if (!route) return undefined;
  const failure = socketFailure(err);
  if (!failure) return undefined;
  const proxy = `proxy ${hostPort(route.proxy)} (from ${route.variable})`;
  if ("what" in failure) {
    if (CUT_CODES.has(failure.code)) {
      return `the connection through ${proxy} to ${hostPort(url)} was cut (${failure.code}), by the proxy or by the server behind it`;
    }
    return `${proxy} ${failure.what}`;
  }
  return `${proxy} would not open a tunnel to ${hostPort(url)} (it answered HTTP ${failure.tunnelStatus} to CONNECT)`;
}

/**
 * Why a request to `target` failed and where to look, as one clause each: the proxy's fault when it
 * was the proxy's (the hint: the proxy, or NO_PROXY), else the error's own text and `check network
 * access to <target>`.
 */
export function unreachable(
  err: unknown,
  target: string | URL,
  env: ProxyEnv = processProxyEnv(),
): { text: string; hint: string; proxied: boolean } {
  const fault = proxyFault(err, target, env);
  const url = typeof target === "string" ? target : target.href;
  if (fault === undefined) {
    return { text: describeError(err), hint: `check network access to ${url}`, proxied: false };
  }
  let host = url;
  try {
    host = new URL(url).hostname;
  } catch {
    // keep the text as given
  }
  return {
    // Node's tunnel errors quote the proxy URL, credentials and all.
    text: `${fault} (${withoutUserinfoIn(describeError(err))})`,
    hint: `check that the proxy is up and lets sf2loki through, or list ${host} in NO_PROXY to reach it directly`,
    proxied: true,
  };
}

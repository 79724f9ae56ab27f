// The undici dispatcher a client is built on, routed by the environment's proxy settings (proxy-env.ts):
// straight to the origin over a keep-alive Pool, or through the proxy undici's ProxyAgent speaks to
// (CONNECT for https origins, absolute-URI forwarding for http ones, as curl does). A Pool talks to
// one origin only and cannot go through a proxy, so a proxied origin gets a ProxyAgent in its place;
// callers see a Dispatcher either way.
import type * as Undici from "undici";
import { Agent, Pool, proxyAgentClass, type Dispatcher } from "./http-dispatchers.ts";
import { proxyFor } from "./proxy-env.ts";
import type { TlsOptions } from "./tls-files.ts";

export interface DispatcherSettings {
  /** A connection (to the origin, or to the proxy and then through it) opens within this many ms. */
  connectMs: number;
  /** Headers arrive, and the body never stalls, within this many ms; unset: undici's default. */
  responseMs?: number;
  /** How long an idle kept-alive connection is kept; unset: undici's default. */
  keepAliveMs?: number;
  /** The origin's own CA bundle and client certificate (`<section>.tls`). */
  tls?: TlsOptions | undefined;
}

function timeouts(s: DispatcherSettings): Undici.Pool.Options {
  return {
    ...(s.responseMs === undefined ? {} : { headersTimeout: s.responseMs, bodyTimeout: s.responseMs }),
    ...(s.keepAliveMs === undefined ? {} : { keepAliveTimeout: s.keepAliveMs }),
  };
}

function direct(origin: string, s: DispatcherSettings): Pool {
  return new Pool(origin, { ...timeouts(s), connect: { timeout: s.connectMs, ...s.tls } });
}

function proxied(proxy: URL, s: DispatcherSettings): Dispatcher {
  const ProxyAgent = proxyAgentClass();
  return new ProxyAgent({
    ...timeouts(s),
    // Credentials in the proxy URL become its Proxy-Authorization header.
    uri: proxy.href,
    proxyTls: { timeout: s.connectMs },
    // The origin's TLS runs inside the tunnel, with the origin's own CA and client certificate.
    requestTls: { timeout: s.connectMs, ...s.tls },
  });
}

/** One origin's dispatcher: a keep-alive Pool, or a ProxyAgent when the environment routes the origin through a proxy. */
export function originDispatcher(origin: string, s: DispatcherSettings): Dispatcher {
  const proxy = proxyFor(origin);
  return proxy ? proxied(proxy, s) : direct(origin, s);
}

/** A dispatcher for any origin (Salesforce: the login host, then the instance), each routed as above. */
export function routedAgent(s: DispatcherSettings): Agent {
  return new Agent({ factory: (origin) => originDispatcher(String(origin), s) });
}

// How a gRPC channel (Pub/Sub's) reaches its endpoint: by the same proxy-env decision every HTTP client
// uses, so one NO_PROXY means one thing. grpc-js would otherwise read the variables itself, and reads
// them differently: lower-case names only, NO_PROXY split on `,` without trimming, no ports, no CIDR,
// so `localhost, .corp` or `host:7443` sent Pub/Sub through the proxy while everything else went
// direct, and an https:// proxy left it direct with a raw line on stderr. Here its own reading is
// switched off (`grpc.enable_http_proxy: 0`) and, when the decision is a proxy, the channel is aimed at
// it with the CONNECT target set: the options grpc-js itself derives from the environment, so TLS to
// Salesforce and its server-name check run inside the tunnel exactly as they would on its own path.
import { ConfigError } from "../errors.ts";
import { proxyRouteFor, processProxyEnv, type ProxyEnv } from "./proxy-env.ts";

export interface GrpcRoute {
  /** What the channel connects to: the endpoint itself, or the proxy. */
  target: string;
  /** Channel options to merge into the client's own. */
  options: Record<string, string | number>;
  /**
   * The proxy, without credentials, and the variable that named it; undefined: direct. `url` (with its
   * credentials) and `tunnelTo` are for a probe that asks the proxy for the same tunnel.
   */
  via?: { proxy: string; variable: string; url: URL; tunnelTo: string };
}

/** `host:port`, `[v6]:port` or `host` (port 443) of a gRPC endpoint, with any `dns:` scheme stripped. */
function hostPort(endpoint: string): { host: string; port: number } {
  const bare = endpoint.replace(/^dns:(\/\/[^/]*\/)?/, "");
  const m = /^(\[[^\]]+\]|[^:]+)(?::(\d+))?$/.exec(bare);
  if (!m) throw new ConfigError(`sources.pubsub.endpoint ${endpoint} is not host:port`);
  return { host: m[1]!, port: Number(m[2] ?? 443) };
}

/**
 * The route to `endpoint` (plaintext when `insecure`, a loopback simulator). Throws ConfigError for an
 * https:// proxy: grpc-js speaks CONNECT to a proxy over plain TCP only, and a channel that silently
 * went direct instead would be the exception NO_PROXY was not asked for.
 */
export function grpcRoute(endpoint: string, insecure: boolean, env: ProxyEnv = processProxyEnv()): GrpcRoute {
  const { host, port } = hostPort(endpoint);
  const direct: GrpcRoute = { target: endpoint, options: { "grpc.enable_http_proxy": 0 } };
  const route = proxyRouteFor(`${insecure ? "http" : "https"}://${host}:${port}`, env);
  if (!route) return direct;
  const { proxy, variable } = route;
  const shown = `${proxy.protocol}//${proxy.host}`;
  if (proxy.protocol !== "http:") {
    throw new ConfigError(
      `${variable} names an ${proxy.protocol}// proxy (${shown}), which Pub/Sub's gRPC client cannot reach (it speaks to a proxy over plain http only; TLS to Salesforce runs inside the tunnel): ` +
        `set ${variable} to http://${proxy.host}, or add ${host.replace(/^\[|\]$/g, "")} to NO_PROXY to send Pub/Sub direct`,
    );
  }
  const options: Record<string, string | number> = {
    "grpc.enable_http_proxy": 0,
    "grpc.http_connect_target": `dns:${host}:${port}`,
    "grpc.default_authority": `${host}:${port}`,
  };
  if (proxy.username) {
    const user = decodeURIComponent(proxy.username);
    options["grpc.http_connect_creds"] = `${user}:${decodeURIComponent(proxy.password)}`;
  }
  return {
    target: `dns:${proxy.hostname}:${proxy.port || "80"}`,
    options,
    via: { proxy: shown, variable, url: proxy, tunnelTo: `${host}:${port}` },
  };
}

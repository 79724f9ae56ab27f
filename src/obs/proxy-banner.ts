// The start-up lines about the outbound proxy: which one is in use (without credentials) and what
// NO_PROXY exempts, once; and, when Pub/Sub streams, where its gRPC client would read the variables
// differently. grpc-js reads only the lower-case names (grpc_proxy, https_proxy, http_proxy; no_grpc_proxy,
// no_proxy), so an upper-case-only HTTPS_PROXY leaves Pub/Sub going direct while everything else
// goes through the proxy.
import { resolvedOrgs } from "../config/orgs.ts";
import type { Config } from "../config/schema.ts";
import { describeProxyEnv, processProxyEnv, type ProxyEnv } from "../util/proxy-env.ts";
import type { Logger } from "./logger.ts";

export function logProxy(log: Logger, proxy: ProxyEnv, env: NodeJS.ProcessEnv, pubsub: boolean): void {
  const described = describeProxyEnv(proxy);
  if (!described) return;
  log.info(described, "outbound HTTP goes through a proxy; NO_PROXY hosts go direct");
  if (!pubsub) return;
  // grpc-js takes the first of these that is set and not empty.
  const first = (...names: string[]): string | undefined => names.map((n) => env[n]).find((v) => v);
  const grpcProxy = first("grpc_proxy", "https_proxy", "http_proxy");
  if (proxy.https && !grpcProxy) {
    log.warn(
      "Pub/Sub's gRPC client reads only the lower-case https_proxy (or http_proxy, grpc_proxy) and goes direct; set https_proxy as well to send it through the proxy",
    );
  } else if (proxy.noProxy && grpcProxy && !first("no_grpc_proxy", "no_proxy")) {
    log.warn(
      "Pub/Sub's gRPC client reads only the lower-case no_proxy (or no_grpc_proxy) and sends every host through the proxy; set no_proxy as well",
    );
  }
}

/** The lines above for this process and config, at a daemon's start. */
export function logProxyAtStart(log: Logger, config: Config): void {
  const pubsub = resolvedOrgs(config).some(
    (o) => o.sources.pubsub.enabled && o.sources.pubsub.topics.length > 0,
  );
  logProxy(log, processProxyEnv(), process.env, pubsub);
}

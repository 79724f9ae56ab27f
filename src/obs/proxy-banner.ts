// The start-up line about the outbound proxy: which one is in use (without credentials), what NO_PROXY
// exempts, and where each org's Pub/Sub endpoint goes. Pub/Sub follows the same decision as every HTTP
// client (util/grpc-route.ts), so the line states one rule; naming the Pub/Sub route spares an operator
// guessing whether their NO_PROXY caught it.
import { pubsubActive } from "../sources/pubsub/settings.ts";
import { resolvedOrgs } from "../config/orgs.ts";
import type { Config } from "../config/schema.ts";
import { grpcRoute } from "../util/grpc-route.ts";
import { describeProxyEnv, processProxyEnv, type ProxyEnv } from "../util/proxy-env.ts";
import type { Logger } from "./logger.ts";

/** The Pub/Sub endpoints a daemon would stream from, plaintext or not. */
export interface PubSubEndpoint {
  endpoint: string;
  insecure: boolean;
}

export function logProxy(log: Logger, proxy: ProxyEnv, pubsub: readonly PubSubEndpoint[]): void {
  const described = describeProxyEnv(proxy);
  if (!described) return;
  const routes = [...new Map(pubsub.map((p) => [p.endpoint, p])).values()].map((p) => {
    const via = grpcRoute(p.endpoint, p.insecure, proxy).via;
    return `${p.endpoint} ${via ? `via ${via.proxy}` : "direct (NO_PROXY)"}`;
  });
  log.info(
    routes.length > 0 ? { ...described, pubsub: routes.join(", ") } : described,
    "outbound HTTP and Pub/Sub go through a proxy; NO_PROXY hosts go direct",
  );
}

/** The line above for this process and config, at a daemon's start. */
export function logProxyAtStart(log: Logger, config: Config): void {
  const pubsub = resolvedOrgs(config)
    .map((o) => o.sources.pubsub)
    .filter((s) => pubsubActive(s))
    .map((s) => ({ endpoint: s.endpoint, insecure: s.insecure }));
  logProxy(log, processProxyEnv(), pubsub);
}

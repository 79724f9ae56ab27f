// node:http(s) Agents for the SDKs that send over node:http (the AWS SDK's NodeHttpHandler, the Azure
// pipeline, the OTLP metric exporter): each talks to one endpoint, so proxy-env.ts answers once for it,
// and Node's own proxy support in http.Agent (`proxyEnv`) carries the requests: CONNECT for https,
// absolute-URI forwarding for http. `proxyEnv` holds only that answer, so no SDK's own reading of the
// variables (or NODE_USE_ENV_PROXY) decides instead.
import { Agent as HttpAgent, type AgentOptions } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import { ConfigError } from "../errors.ts";
import { proxyFor } from "./proxy-env.ts";

/** Node's http.Agent learnt `proxyEnv` in 24.5 and 22.21; older ones ignore it and go direct. */
export function agentsSpeakProxy(version: string): boolean {
  const [major = 0, minor = 0] = version.split(".").map(Number);
  return major > 24 || (major === 24 && minor >= 5) || (major === 22 && minor >= 21);
}

/** Keep-alive agent options for requests to `target`, through its proxy when the environment names one. */
export function nodeAgentOptions(target: string, nodeVersion = process.versions.node): AgentOptions {
  const proxy = proxyFor(target);
  if (proxy && !agentsSpeakProxy(nodeVersion)) {
    throw new ConfigError(
      `${new URL(target).origin} is to be reached through the proxy ${proxy.protocol}//${proxy.host}, but ` +
        `Node ${nodeVersion} cannot send node:http requests through a proxy; run Node >= 22.21 or >= 24.5 ` +
        `(source scripts/use-node.sh), or list the host in NO_PROXY`,
    );
  }
  // Credentials in the proxy URL become its Proxy-Authorization header.
  return { keepAlive: true, proxyEnv: proxy ? { HTTP_PROXY: proxy.href, HTTPS_PROXY: proxy.href } : {} };
}

/** An http or https Agent (by `target`'s scheme) built from nodeAgentOptions. */
export function nodeAgent(target: string): HttpAgent {
  const options = nodeAgentOptions(target);
  return new URL(target).protocol === "http:" ? new HttpAgent(options) : new HttpsAgent(options);
}

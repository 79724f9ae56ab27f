// The outbound proxy the environment names, read once, and the one answer every HTTP client asks of
// it: which proxy, if any, a request to this URL goes through. The variables are the ones curl and
// httpx read: HTTPS_PROXY for https targets, HTTP_PROXY for http ones (no fallback from one to the
// other), NO_PROXY for the exceptions; each in either case, the lower-case one winning when both are
// set. Every client (undici's, the AWS, Azure and GCS SDKs', the Kubernetes one) is handed this answer
// rather than left to its own reading, so they all agree on what NO_PROXY means.
import { BlockList, isIP } from "node:net";
import { ConfigError } from "../errors.ts";
import { withoutUserinfo } from "./userinfo.ts";

/** One NO_PROXY entry: `*`, a host or domain (with or without a leading `.` or `*.`), an IP or CIDR. */
type NoProxyEntry =
  | { kind: "all"; port: number }
  | { kind: "domain"; name: string; port: number }
  | { kind: "ip"; list: BlockList; port: number };

export interface ProxyEnv {
  /** For https targets: `https_proxy` / `HTTPS_PROXY`. */
  readonly https: URL | undefined;
  /** For http targets: `http_proxy` / `HTTP_PROXY`. */
  readonly http: URL | undefined;
  /** The variable each was read from, as set (`https_proxy` or `HTTPS_PROXY`), for messages. */
  readonly from?: { readonly https?: string; readonly http?: string };
  /** The NO_PROXY value as set (for the start-up log), "" when unset. */
  readonly noProxy: string;
  readonly exceptions: readonly NoProxyEntry[];
}

const DEFAULT_PORT: Record<string, number> = { "http:": 80, "https:": 443 };

/** The variable that holds a setting, lower case first, and its value; blank counts as unset. */
function lookup(env: NodeJS.ProcessEnv, name: string): { name: string; value: string } | undefined {
  for (const key of [name.toLowerCase(), name.toUpperCase()]) {
    const value = env[key]?.trim();
    if (value) return { name: key, value };
  }
  return undefined;
}

function proxyUrl(env: NodeJS.ProcessEnv, name: string): { url: URL; variable: string } | undefined {
  const found = lookup(env, name);
  if (!found) return undefined;
  // `proxy:3128` without a scheme means http, as it does to curl.
  const raw = /^[a-z][a-z0-9+.-]*:\/\//i.test(found.value) ? found.value : `http://${found.value}`;
  const fix = `set it to http://host:port (credentials as http://user:password@host:port), or unset it`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new ConfigError(`${found.name} is not a URL (${withoutUserinfo(found.value)}); ${fix}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new ConfigError(
      `${found.name} names a ${url.protocol}// proxy; sf2loki speaks to http:// and https:// proxies only: ${fix}`,
    );
  }
  if (url.hostname === "") {
    throw new ConfigError(`${found.name} names no proxy host (${withoutUserinfo(found.value)}); ${fix}`);
  }
  return { url, variable: found.name };
}

/** `host`, `host:port`, `[v6]:port`: the name and the port (0: any). */
function splitPort(entry: string): { name: string; port: number } {
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(entry);
  if (bracketed) return { name: bracketed[1]!, port: Number(bracketed[2] ?? 0) };
  const hostPort = /^([^:]+):(\d+)$/.exec(entry);
  if (hostPort) return { name: hostPort[1]!, port: Number(hostPort[2]) };
  return { name: entry, port: 0 };
}

function exception(entry: string, variable: string): NoProxyEntry {
  const { name: raw, port } = splitPort(entry);
  if (raw === "*") return { kind: "all", port };
  const [address, prefix] = raw.split("/", 2) as [string, string | undefined];
  const family = isIP(address);
  if (family !== 0) {
    const list = new BlockList();
    const type = family === 4 ? "ipv4" : "ipv6";
    if (prefix === undefined) {
      list.addAddress(address, type);
    } else {
      const bits = Number(prefix);
      if (!/^\d+$/.test(prefix) || bits > (family === 4 ? 32 : 128)) {
        throw new ConfigError(
          `${variable} holds ${entry}, not a CIDR range; write it as address/bits (10.0.0.0/8) or list the host`,
        );
      }
      list.addSubnet(address, bits, type);
    }
    return { kind: "ip", list, port };
  }
  // `.example.com`, `*.example.com` and `example.com` all mean the domain and every host under it.
  const name = raw
    .replace(/^\*?\./, "")
    .replace(/\.$/, "")
    .toLowerCase();
  return { kind: "domain", name, port };
}

/** Reads the proxy variables of `env`. Throws ConfigError naming the variable when one is unusable. */
export function readProxyEnv(env: NodeJS.ProcessEnv): ProxyEnv {
  const https = proxyUrl(env, "HTTPS_PROXY");
  const http = proxyUrl(env, "HTTP_PROXY");
  const from = { https: https?.variable, http: http?.variable };
  const found = lookup(env, "NO_PROXY");
  const noProxy = found?.value ?? "";
  const exceptions = noProxy
    .split(/[\s,]+/)
    .filter((e) => e !== "")
    .map((e) => exception(e, found!.name));
  return { https: https?.url, http: http?.url, from, noProxy, exceptions };
}

function excepted(exceptions: readonly NoProxyEntry[], host: string, port: number): boolean {
  const family = isIP(host);
  return exceptions.some((e) => {
    if (e.port !== 0 && e.port !== port) return false;
    if (e.kind === "all") return true;
    if (e.kind === "ip") return family !== 0 && e.list.check(host, family === 4 ? "ipv4" : "ipv6");
    // An address is only ever matched whole: 10.0.0.1 is not "under" 0.0.1.
    return host === e.name || (family === 0 && host.endsWith(`.${e.name}`));
  });
}

/** The proxy a request to `target` goes through and the variable that named it; undefined: direct. */
export function proxyRouteFor(
  target: string | URL,
  env: ProxyEnv = processProxyEnv(),
): { proxy: URL; variable: string } | undefined {
  const url = typeof target === "string" ? new URL(target) : target;
  const https = url.protocol === "https:";
  const proxy = https ? env.https : url.protocol === "http:" ? env.http : undefined;
  if (!proxy) return undefined;
  const host = url.hostname
    .replace(/^\[(.*)\]$/, "$1")
    .replace(/\.$/, "")
    .toLowerCase();
  const port = url.port === "" ? (DEFAULT_PORT[url.protocol] ?? 0) : Number(url.port);
  if (excepted(env.exceptions, host, port)) return undefined;
  const variable = (https ? env.from?.https : env.from?.http) ?? (https ? "HTTPS_PROXY" : "HTTP_PROXY");
  return { proxy, variable };
}

/** The proxy a request to `target` goes through, or undefined: straight there. */
export function proxyFor(target: string | URL, env: ProxyEnv = processProxyEnv()): URL | undefined {
  return proxyRouteFor(target, env)?.proxy;
}

let fromProcess: ProxyEnv | undefined;

/** This process's proxy settings, read from its environment on first use and kept. */
export function processProxyEnv(): ProxyEnv {
  fromProcess ??= readProxyEnv(process.env);
  return fromProcess;
}

/** What the start-up log says of the proxy: its URLs without credentials, and NO_PROXY; undefined if none. */
export function describeProxyEnv(env: ProxyEnv): Record<string, string> | undefined {
  if (!env.https && !env.http) return undefined;
  const bare = (url: URL | undefined): string => {
    if (!url) return "none (direct)";
    return `${url.protocol}//${url.host}${url.username ? " (with credentials)" : ""}`;
  };
  return { https_proxy: bare(env.https), http_proxy: bare(env.http), no_proxy: env.noProxy || "none" };
}

// `proxy`: the outbound proxy the environment names, checked before anything goes through it, so a
// proxy that is down reads as the proxy and not as a Salesforce or Loki outage in every row after it.
// One row per proxy in use: the endpoints it carries (decided as every client decides, proxy-env.ts),
// and one live look: a socket to the proxy and, for https endpoints, the CONNECT tunnel a client asks for.
import { pubsubActive } from "../../sources/pubsub/settings.ts";
import { describeError } from "../../errors.ts";
import { proxyRouteFor, readProxyEnv, type ProxyEnv } from "../../util/proxy-env.ts";
import { probeProxy } from "../../util/proxy-probe.ts";
import { fail, pass, type CheckRow, type DoctorEnv, type OrgUnderCheck } from "../check.ts";

const PROBE_MS = 5000;

/** Every endpoint the orgs under check reach, as a URL (scheme decides the proxy variable). */
function endpoints(env: DoctorEnv, orgs: readonly OrgUnderCheck[]): URL[] {
  const urls = new Set<string>();
  for (const { wiring } of orgs) {
    urls.add(new URL(wiring.org.salesforce.login_url).origin);
    const ps = wiring.org.sources.pubsub;
    if (pubsubActive(ps)) {
      const bare = ps.endpoint.replace(/^dns:(\/\/[^/]*\/)?/, "");
      if (URL.canParse(`http://${bare}`)) urls.add(`${ps.insecure ? "http" : "https"}://${bare}`);
    }
  }
  for (const d of env.graph.destinations) urls.add(new URL(d.destination.loki.url).origin);
  return [...urls].map((u) => new URL(u));
}

const hostPort = (url: URL): string =>
  `${url.hostname}:${url.port || (url.protocol === "https:" ? "443" : "80")}`;

export async function checkProxy(env: DoctorEnv, orgs: readonly OrgUnderCheck[]): Promise<CheckRow[]> {
  let proxies: ProxyEnv;
  try {
    proxies = readProxyEnv(env.env);
  } catch (err) {
    return [fail("proxy", describeError(err))];
  }
  if (!proxies.https && !proxies.http) {
    return [pass("proxy", "no HTTPS_PROXY or HTTP_PROXY set: every client connects directly")];
  }
  const groups = new Map<string, { proxy: URL; variable: string; carried: URL[] }>();
  const direct: string[] = [];
  for (const url of endpoints(env, orgs)) {
    const route = proxyRouteFor(url, proxies);
    if (!route) {
      direct.push(hostPort(url));
      continue;
    }
    const group = groups.get(route.proxy.href) ?? { ...route, carried: [] };
    group.carried.push(url);
    groups.set(route.proxy.href, group);
  }
  const exempt = direct.length > 0 ? `; direct (NO_PROXY): ${direct.join(", ")}` : "";
  if (groups.size === 0) {
    return [pass("proxy", `a proxy is set, but NO_PROXY exempts every endpoint${exempt}`)];
  }
  const rows: CheckRow[] = [];
  for (const { proxy, variable, carried } of groups.values()) {
    const name = groups.size === 1 ? "proxy" : `proxy:${variable}`;
    const shown = `${proxy.protocol}//${proxy.host}`;
    const carries = carried.map(hostPort).join(", ");
    // The tunnel a client would ask for first; an http-only proxy is asked for its socket alone.
    const tunnelled = carried.find((u) => u.protocol === "https:");
    const probe = await probeProxy(proxy, tunnelled && hostPort(tunnelled), PROBE_MS);
    if (probe.ok) {
      const how = probe.tunnelled ? `opened a tunnel to ${hostPort(tunnelled!)}` : "accepted a connection";
      rows.push(
        pass(name, `${shown} (from ${variable}) ${how} in ${probe.ms}ms; carries ${carries}${exempt}`),
      );
      continue;
    }
    rows.push(
      fail(
        name,
        `proxy ${proxy.host} (from ${variable}) ${probe.what}; it carries ${carries}: check that the proxy is up ` +
          `and lets sf2loki through, or list those hosts in NO_PROXY to reach them directly${exempt}`,
      ),
    );
  }
  return rows;
}

// The undici dispatchers the daemon uses (a keep-alive Pool per Loki origin, an Agent for Salesforce,
// a ProxyAgent where the environment names a proxy), loaded without undici's index. `import "undici"`
// also loads fetch, WebSocket, EventSource, the cache, the mock agents and eight more dispatchers:
// 4.6 MiB of heap and ~5 MiB of RSS a daemon keeps for its whole life (docs/capacity.md), for code it
// never runs. undici's index gives every Dispatcher its request API (`Object.assign(Dispatcher.prototype,
// api)`); we do the same, so `pool.request(...)` works whether or not something else loads the index too.
import { createRequire } from "node:module";
import type * as Undici from "undici";

const require = createRequire(import.meta.url);

// undici has no `exports` map, so its files are public paths; a version that moves them fails here at
// start-up (and in test/util/http-dispatchers.test.ts), never mid-run.
const dispatcher = require("undici/lib/dispatcher/dispatcher.js") as { prototype: object };
const api = require("undici/lib/api/index.js") as object;
Object.assign(dispatcher.prototype, api);

export const Pool = require("undici/lib/dispatcher/pool.js") as typeof Undici.Pool;
export type Pool = Undici.Pool;
export const Agent = require("undici/lib/dispatcher/agent.js") as typeof Undici.Agent;
export type Agent = Undici.Agent;
export type { Dispatcher } from "undici";

let proxyAgent: typeof Undici.ProxyAgent | undefined;

/** undici's ProxyAgent, loaded on first use: a daemon that reaches everything directly never holds it. */
export function proxyAgentClass(): typeof Undici.ProxyAgent {
  proxyAgent ??= require("undici/lib/dispatcher/proxy-agent.js") as typeof Undici.ProxyAgent;
  return proxyAgent;
}

/** Whether close() or destroy() was called: every undici dispatcher says so, ProxyAgent's typings omit it. */
export function isClosed(dispatcher: Undici.Dispatcher): boolean {
  return (dispatcher as { closed?: boolean }).closed === true;
}

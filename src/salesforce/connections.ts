// One org's Salesforce connections: the login host and the instance, each direct or through the proxy
// the environment names (src/util/routed-dispatchers.ts), with `salesforce.tls`. The token provider,
// the REST client and topic discovery share them.
import type { Dispatcher } from "../util/http-dispatchers.ts";
import { routedAgent } from "../util/routed-dispatchers.ts";
import type { TlsOptions } from "../util/tls-files.ts";

/**
 * Every REST call ends: a connection opens within `connectMs`, headers arrive within `responseMs`,
 * and a body never goes `responseMs` without a byte. undici drops a timed-out socket, so the retry
 * of a transport error (SF2LOKI_SF_TRANSPORT, transient) opens a fresh connection.
 */
export interface RestDeadlines {
  connectMs: number;
  responseMs: number;
}

export const SALESFORCE_REST_DEADLINES: Readonly<RestDeadlines> = { connectMs: 10_000, responseMs: 30_000 };

export function salesforceDispatcher(
  tls?: TlsOptions,
  deadlines: RestDeadlines = SALESFORCE_REST_DEADLINES,
): Dispatcher {
  return routedAgent({ connectMs: deadlines.connectMs, responseMs: deadlines.responseMs, tls });
}

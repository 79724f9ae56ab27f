// One GET on the org's instance with the process's token: a 401 (the session rotated under us) is
// retried once with a fresh token. For the few REST reads outside the RestClient (describeGlobal for
// topic discovery, the Tooling API's managed subscription records).
import type { TokenSource } from "./auth.ts";
import { getWithBearer, type HttpResult } from "./auth-http.ts";
import type { Dispatcher } from "../util/http-dispatchers.ts";

/** `path` is under the instance URL, e.g. `/services/data/v60.0/sobjects/`; returns the URL asked. */
export async function getOnInstance(
  auth: TokenSource,
  path: string,
  signal?: AbortSignal,
  http?: Dispatcher,
): Promise<{ url: string; res: HttpResult }> {
  for (let attempt = 1; ; attempt++) {
    const token = await auth.token(signal);
    const url = `${token.instanceUrl}${path}`;
    const res = await getWithBearer(url, token.accessToken, signal, undefined, http);
    if (res.status !== 401 || attempt > 1) return { url, res };
    auth.invalidate(token.accessToken);
  }
}

// The two HTTP shapes auth needs (form POST, bearer GET), with a bounded timeout and a status/body
// result, so the caller classifies retries (transport + 5xx) in one place. They go through the org's
// undici connections (direct or via the environment's proxy, with `salesforce.tls`), never the global
// fetch: Node's bundled undici cannot drive the project's dispatchers.
import { describeError } from "../errors.ts";
import type { Dispatcher } from "../util/http-dispatchers.ts";
import { salesforceDispatcher } from "./connections.ts";

/**
 * The whole exchange (connect, headers and body) ends within this many ms: the timeout aborts the
 * request, which destroys its socket, so a connection that died silently is never reused and the
 * caller's retry opens a fresh one.
 */
export const SALESFORCE_HTTP_TIMEOUT_MS = 30_000;

export interface HttpResult {
  status: number;
  body: string;
}

/** A non-2xx answer, kept whole for classification and for the operator's message. */
export class HttpStatusError extends Error {
  readonly status: number;
  readonly body: string;
  constructor(status: number, body: string) {
    super(`HTTP ${status}`);
    this.status = status;
    this.body = body;
  }
}

/** A request that got no HTTP answer (refused, reset, TLS or proxy failure): worth another attempt. */
export class HttpTransportError extends Error {
  constructor(url: string, cause: unknown) {
    super(`no answer from ${new URL(url).origin}: ${describeError(cause)}`, { cause });
  }
}

let fallback: Dispatcher | undefined;

/**
 * The connections auth uses when none is injected (tests, one-off tools): one shared set, like fetch's
 * global dispatcher; the daemon hands each org's own, the one its REST client uses.
 */
function sharedDispatcher(): Dispatcher {
  fallback ??= salesforceDispatcher();
  return fallback;
}

async function exchange(
  url: string,
  request: { method: "GET" | "POST"; headers: Record<string, string>; body?: string },
  signal: AbortSignal | undefined,
  timeoutMs: number,
  dispatcher: Dispatcher = sharedDispatcher(),
): Promise<HttpResult> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const bounded = signal ? AbortSignal.any([signal, timeout]) : timeout;
  const target = new URL(url);
  try {
    const res = await dispatcher.request({
      origin: target.origin,
      path: `${target.pathname}${target.search}`,
      ...request,
      signal: bounded,
    });
    return { status: res.statusCode, body: await res.body.text() };
  } catch (err) {
    // The caller's abort, or the timeout's TimeoutError, as they are; anything else is the transport's.
    if (bounded.aborted) throw bounded.reason;
    throw new HttpTransportError(url, err);
  }
}

export function postForm(
  url: string,
  form: Record<string, string>,
  signal?: AbortSignal,
  timeoutMs = SALESFORCE_HTTP_TIMEOUT_MS,
  dispatcher?: Dispatcher,
): Promise<HttpResult> {
  const headers = { "content-type": "application/x-www-form-urlencoded", accept: "application/json" };
  const body = new URLSearchParams(form).toString();
  return exchange(url, { method: "POST", headers, body }, signal, timeoutMs, dispatcher);
}

export function getWithBearer(
  url: string,
  token: string,
  signal?: AbortSignal,
  timeoutMs = SALESFORCE_HTTP_TIMEOUT_MS,
  dispatcher?: Dispatcher,
): Promise<HttpResult> {
  const headers = { authorization: `Bearer ${token}`, accept: "application/json" };
  return exchange(url, { method: "GET", headers }, signal, timeoutMs, dispatcher);
}

/** Transport failures, our timeout and 5xx are worth another attempt; 4xx is not. */
export function isTransientHttp(err: unknown): boolean {
  if (err instanceof HttpStatusError) return err.status >= 500;
  if (err instanceof DOMException) return err.name === "TimeoutError";
  return err instanceof HttpTransportError;
}

/** The first `max` characters of a response body, for messages. */
export function clip(body: string, max = 300): string {
  const flat = body.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

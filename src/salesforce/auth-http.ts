// The two HTTP shapes auth needs (form POST, bearer GET), with a bounded timeout and a status/body
// result, so the caller classifies retries (transport + 5xx) in one place.

/**
 * The whole exchange (connect, headers and body) ends within this many ms: the timeout aborts the
 * fetch, which destroys its socket, so a connection that died silently is never reused and the
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

function withTimeout(signal: AbortSignal | undefined, ms: number): AbortSignal {
  const timeout = AbortSignal.timeout(ms);
  return signal ? AbortSignal.any([signal, timeout]) : timeout;
}

export async function postForm(
  url: string,
  form: Record<string, string>,
  signal?: AbortSignal,
  timeoutMs = SALESFORCE_HTTP_TIMEOUT_MS,
): Promise<HttpResult> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
    body: new URLSearchParams(form).toString(),
    signal: withTimeout(signal, timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}

export async function getWithBearer(
  url: string,
  token: string,
  signal?: AbortSignal,
  timeoutMs = SALESFORCE_HTTP_TIMEOUT_MS,
): Promise<HttpResult> {
  const res = await fetch(url, {
    headers: { authorization: `Bearer ${token}`, accept: "application/json" },
    signal: withTimeout(signal, timeoutMs),
  });
  return { status: res.status, body: await res.text() };
}

/** Transport failures (fetch's TypeError, our timeout) and 5xx are worth another attempt; 4xx is not. */
export function isTransientHttp(err: unknown): boolean {
  if (err instanceof HttpStatusError) return err.status >= 500;
  if (err instanceof DOMException) return err.name === "TimeoutError";
  return err instanceof TypeError;
}

/** The first `max` characters of a response body, for messages. */
export function clip(body: string, max = 300): string {
  const flat = body.replace(/\s+/g, " ").trim();
  return flat.length > max ? `${flat.slice(0, max)}…` : flat;
}

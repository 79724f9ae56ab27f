// One HTTP exchange through an undici dispatcher with a handler of our own, not undici's request():
// a push (Loki's or OTLP's) needs a status, one header and at most a few KB of an error body, and request() wraps
// every response in a Readable and a handler that hold the request body. Measured on the e2e bench
// (bench/README.md, "The request body and the major GCs"), those kept each ~46 KB compressed body
// alive past the young generation's collections: the bodies reached old space and only a full GC
// freed them, so at 1 300 pushes/s V8 ran a full mark of the heap every second for ~60 MB/s of dead
// buffers. Here the body is referenced only until undici has sent it and answered.
import type { IncomingHttpHeaders } from "node:http";
import { abortReason } from "../../util/abortable.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";

/** What is read past the kept bytes before the connection is given up instead (undici's dump() limit). */
export const DISCARD_MAX_BYTES = 128 * 1024;

export interface ExchangeRequest {
  origin: string;
  path: string;
  method: "POST";
  headers: Record<string, string>;
  body: Buffer;
  headersTimeout: number;
  bodyTimeout: number;
}

export interface Exchanged {
  status: number;
  headers: IncomingHttpHeaders;
  /** The body's first `keepBytes(status)` bytes as UTF-8; the rest was read and dropped. */
  text: string;
  /** The same bytes, undecoded (an OTLP answer is protobuf). */
  raw: Buffer;
  /** Set when the body broke off after the headers (reset, timeout); `text` holds what came. */
  bodyError: Error | undefined;
}

/**
 * Sends `request` and resolves once the response ended, broke off after its headers (`bodyError`),
 * or ran `DISCARD_MAX_BYTES` past what is kept (then the connection is dropped). Rejects when no
 * response started: a transport error, a headers timeout, or `signal`, which also settles at once
 * a request still waiting for its connection (undici aborts it when it starts).
 */
export function exchange(
  dispatcher: Dispatcher,
  request: ExchangeRequest,
  keepBytes: (status: number) => number,
  signal?: AbortSignal,
): Promise<Exchanged> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  const { promise, resolve, reject } = Promise.withResolvers<Exchanged>();
  let controller: Dispatcher.DispatchController | undefined;
  let settled = false;
  let status = 0;
  let headers: IncomingHttpHeaders = {};
  let keep = 0;
  let read = 0;
  const chunks: Buffer[] = [];
  const onAbort = (): void => {
    const reason = abortReason(signal!);
    controller?.abort(reason);
    fail(reason);
  };
  const settle = (): void => {
    settled = true;
    signal?.removeEventListener("abort", onAbort);
  };
  const fail = (err: Error): void => {
    if (settled) return;
    settle();
    reject(err);
  };
  const finish = (bodyError: Error | undefined): void => {
    if (settled) return;
    settle();
    const raw = Buffer.concat(chunks).subarray(0, Math.min(read, keep));
    resolve({ status, headers, text: raw.toString("utf8"), raw, bodyError });
  };
  signal?.addEventListener("abort", onAbort, { once: true });
  try {
    dispatcher.dispatch(request, {
      onRequestStart(c) {
        controller = c;
        if (settled) c.abort(signal ? abortReason(signal) : new Error("exchange already settled"));
      },
      onResponseStart(_c, statusCode, responseHeaders) {
        if (statusCode < 200) return; // informational (103 Early Hints): the answer is still to come
        status = statusCode;
        headers = responseHeaders;
        keep = keepBytes(statusCode);
      },
      onResponseData(c, chunk) {
        if (read < keep) chunks.push(chunk);
        read += chunk.length;
        if (read > keep + DISCARD_MAX_BYTES) {
          finish(undefined);
          c.abort(new Error(`response body longer than ${keep + DISCARD_MAX_BYTES} bytes; dropped`));
        }
      },
      onResponseEnd() {
        finish(undefined);
      },
      onResponseError(_c, err) {
        if (status === 0) fail(err);
        else finish(err);
      },
    });
  } catch (err) {
    fail(err instanceof Error ? err : new Error(String(err)));
  }
  return promise;
}

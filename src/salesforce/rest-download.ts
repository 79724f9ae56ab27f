// A streamed response body (an EventLogFile CSV, an ApexLog body) that counts its bytes as they pass
// and turns a connection cut mid-body into a typed transient error. Nothing here buffers the blob.
import type { Readable } from "node:stream";
import { SalesforceTransportError } from "./rest-errors.ts";

export class RestDownload implements AsyncIterable<Buffer> {
  readonly status: number;
  /** The server's `Date` header in epoch ms (the ELF clock-skew probe reads it). */
  readonly serverDateMs: number | undefined;
  /** `Content-Length` when the server sent one. */
  readonly contentLength: number | undefined;
  readonly #body: Readable;
  readonly #where: string;
  readonly #signal: AbortSignal | undefined;
  #bytes = 0;

  constructor(init: {
    status: number;
    headers: Record<string, string | string[] | undefined>;
    body: Readable;
    where: string;
    signal: AbortSignal | undefined;
  }) {
    this.status = init.status;
    const date = init.headers.date;
    const parsed = typeof date === "string" ? Date.parse(date) : NaN;
    this.serverDateMs = Number.isNaN(parsed) ? undefined : parsed;
    const length = Number(init.headers["content-length"]);
    this.contentLength = Number.isSafeInteger(length) && length >= 0 ? length : undefined;
    this.#body = init.body;
    this.#where = init.where;
    this.#signal = init.signal;
  }

  /** Bytes received so far. */
  get bytes(): number {
    return this.#bytes;
  }

  async *[Symbol.asyncIterator](): AsyncIterator<Buffer> {
    try {
      for await (const chunk of this.#body) {
        const buf = chunk as Buffer;
        this.#bytes += buf.length;
        yield buf;
      }
    } catch (err) {
      if (this.#signal?.aborted) throw this.#signal.reason;
      throw new SalesforceTransportError(this.#where, err);
    } finally {
      this.close();
    }
  }

  /** The whole body as UTF-8, or `undefined` as soon as it grows past `maxBytes` (then closed). */
  async text(maxBytes: number): Promise<string | undefined> {
    const chunks: Buffer[] = [];
    for await (const chunk of this) {
      chunks.push(chunk);
      if (this.#bytes > maxBytes) return undefined;
    }
    return Buffer.concat(chunks).toString("utf8");
  }

  /** Idempotent; every exit path of a consumer calls it. */
  close(): void {
    if (!this.#body.destroyed) this.#body.destroy();
  }
}

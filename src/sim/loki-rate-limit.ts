// A tenant's ingestion rate limit as Loki's distributor applies it (local strategy): a token bucket per
// tenant, `bytesPerSecond` refill, `burstBytes` deep, starting full, charged with each request's line and
// structured-metadata bytes (Loki leaves the `level` field out). A request that does not fit is refused
// whole with Loki's 429 text; one larger than the burst never fits. Loki charges only the entries that
// passed validation; this charges every entry, which only matters for a request that also holds refusals.
import type { DecodedStream } from "./loki-decoded.ts";

export interface IngestionRateLimit {
  bytesPerSecond: number;
  burstBytes: number;
}

interface Bucket {
  tokens: number;
  atMs: number;
}

export class TenantRateLimiter {
  readonly #limit: IngestionRateLimit;
  readonly #nowMs: () => number;
  readonly #buckets = new Map<string, Bucket>();

  constructor(limit: IngestionRateLimit, nowMs: () => number) {
    this.#limit = limit;
    this.#nowMs = nowMs;
  }

  /** Undefined when the request may go (its bytes are taken); else Loki's 429 body. */
  refusal(tenant: string, streams: readonly DecodedStream[]): string | undefined {
    let lines = 0;
    let bytes = 0;
    for (const s of streams) {
      for (const e of s.entries) {
        lines++;
        bytes += Buffer.byteLength(e.line, "utf8");
        for (const name in e.metadata) {
          if (name !== "level") bytes += name.length + e.metadata[name]!.length;
        }
      }
    }
    const { bytesPerSecond, burstBytes } = this.#limit;
    const now = this.#nowMs();
    const bucket = this.#buckets.get(tenant) ?? { tokens: burstBytes, atMs: now };
    bucket.tokens = Math.min(burstBytes, bucket.tokens + ((now - bucket.atMs) / 1000) * bytesPerSecond);
    bucket.atMs = now;
    this.#buckets.set(tenant, bucket);
    if (bytes <= bucket.tokens) {
      bucket.tokens -= bytes;
      return undefined;
    }
    return (
      `Ingestion rate limit exceeded for user ${tenant} (limit: ${bytesPerSecond} bytes/sec) while ` +
      `attempting to ingest '${lines}' lines totaling '${bytes}' bytes, reduce log volume or contact ` +
      `your Loki administrator to see if the limit can be increased`
    );
  }
}

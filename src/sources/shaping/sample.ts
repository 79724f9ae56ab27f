// Deterministic sampling: the same key is kept or dropped identically on every replay.
import { createHash } from "node:crypto";

/** Keep iff the first 8 bytes of SHA-256(key), big-endian, mod 10 000 fall below rate x 10 000. */
export function shouldKeep(key: string, rate: number): boolean {
  if (rate >= 1) return true;
  const bucket = createHash("sha256").update(key, "utf8").digest().readBigUInt64BE(0) % 10_000n;
  return Number(bucket) < rate * 10_000;
}

// What the shared object-store engine needs from S3 or GCS: a whole-object GET that returns the bytes and
// the CAS token from ONE response, a conditional PUT, and a verdict on every error.
import type { ObjectStoreHints } from "./errors.ts";

/** `create`: only if absent (If-None-Match: *, ifGenerationMatch=0); `match`: only if still at `token`. */
export type Precondition = { kind: "create" } | { kind: "match"; token: string };

export interface StoredObject {
  bytes: Uint8Array;
  /** The ETag exactly as returned (quotes included), or the generation as a decimal string. */
  token: string;
}

/**
 * - `transient`: a blip (throttling, 408/429/5xx, a dead socket); retry.
 * - `precondition-failed`: the stored version is not the one named (412).
 * - `concurrent-conflict`: another conditional write to the object is in flight (S3 409); retry.
 * - `access-denied`: 401/403; fatal, with a permissions hint.
 * - `missing-scope`: the bucket or container itself does not exist; fatal, with the command creating it.
 * - `other`: anything else; fatal as is.
 */
export type ErrorClass =
  "transient" | "precondition-failed" | "concurrent-conflict" | "access-denied" | "missing-scope" | "other";

export interface ObjectBackend {
  readonly hints: ObjectStoreHints;
  /** The whole object, body read to the end inside this call; undefined when it does not exist. */
  get(signal: AbortSignal): Promise<StoredObject | undefined>;
  /** Writes the whole object under the precondition; resolves to the new token (undefined if none came back). */
  put(bytes: Uint8Array, precondition: Precondition, signal: AbortSignal): Promise<string | undefined>;
  classify(err: unknown): ErrorClass;
  /**
   * The names of the objects under `prefix` in the same bucket or container (sharding's membership
   * leases). One listing, every page read; optional because the checkpoint stores never list.
   */
  list?(prefix: string, signal: AbortSignal): Promise<string[]>;
  /**
   * Deletes the object only while it is still at `token` (undefined: unconditionally); a miss or a
   * moved version is not an error. Optional: sharding's clean-up of departed members' leases only.
   */
  delete?(token: string | undefined, signal: AbortSignal): Promise<void>;
  /** Releases the client; the next call creates a new one. Idempotent. */
  close(): Promise<void>;
}

// The checkpoint store seam: one flat JSON document of string keys to string values, shared by every
// source. The pipeline commits through it only after Loki accepted the data (at-least-once).

import type { WriteFence } from "./fence.ts";

export type { WriteFence };

export interface CheckpointStore {
  /** First call reads the whole document; later calls read the cache. Missing key: undefined. */
  load(key: string): Promise<string | undefined>;
  commit(key: string, value: string): Promise<void>;
  /** Merges every item and persists with exactly one write. */
  commitMany(items: Readonly<Record<string, string>>): Promise<void>;
  /**
   * Makes the document exactly `items` (reserved keys kept) with one write: `state import --replace`,
   * so moving checkpoints between backends is one CAS-protected step.
   */
  replace(items: Readonly<Record<string, string>>): Promise<void>;
  /** Removes one key; no write at all when the key is absent. */
  delete(key: string): Promise<void>;
  /** The whole document, reserved keys excluded, read fresh from the backend. */
  snapshot(): Promise<Record<string, string>>;
  /** Drops the cached document and CAS token so the next call reads fresh. Sync, idempotent. */
  reset(): void;
  /** HA: the leadership term every write is made under (checked per attempt, epoch stamped). */
  setFence(fence: WriteFence | undefined): void;
  /**
   * HA: the new leader's first act. One conditional write stamping the term's epoch, so any write an
   * older term prepared fails its precondition; StateFenceError when a newer epoch is already stored.
   * Without a fence (or an epoch) it writes nothing.
   */
  claimTerm(): Promise<void>;
  /** The highest epoch stamped in the document, read fresh: the lease's epoch floor (#99). */
  readFenceEpoch(): Promise<number | undefined>;
  /** Where the document lives, for messages: a path, `s3://bucket/key` or `gs://bucket/object`. */
  readonly location: string;
  close(): Promise<void>;
}

// The checkpoint store seam: one flat JSON document of string keys to string values, shared by every
// source. The pipeline commits through it only after Loki accepted the data (at-least-once).

/** Runs first in every commit and delete; throws (normally StateFenceError) to refuse the write. */
export type Fence = () => void | Promise<void>;

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
  setFence(fence: Fence | undefined): void;
  /** Where the document lives, for messages: a path, `s3://bucket/key` or `gs://bucket/object`. */
  readonly location: string;
  close(): Promise<void>;
}

/** Keys the stores write for themselves and the CLI refuses to touch. */
export const RESERVED_KEYS: ReadonlySet<string> = new Set(["__fence_epoch__"]);

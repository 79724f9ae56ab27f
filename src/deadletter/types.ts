// What the dead-letter store holds and the one interface its backends (a segmented JSON-lines file,
// one object per group on S3, GCS or Azure) share: append with eviction at the bound, read, remove.
import type { Labels } from "../model.ts";

/** One dead letter, exactly as stored (one JSON line); snake_case like the config and the checkpoint keys. */
export interface DeadLetterRecord {
  /** Unique and sortable by the time it was kept. */
  readonly id: string;
  /** ISO-8601 UTC: when the pipeline kept it. */
  readonly dead_lettered_at: string;
  readonly reason: string;
  readonly detail: string;
  /** The `org` label of the entry, null for a single-org deployment. */
  readonly org: string | null;
  /** The checkpoint key the entry would have advanced (which source and object it came from). */
  readonly checkpoint_key: string;
  readonly labels: Labels;
  /** Integer nanoseconds since the epoch, as a string (JSON numbers cannot carry it). */
  readonly timestamp_ns: string;
  readonly line: string;
  readonly structured_metadata: Labels;
}

/** The store's bound: past either one the oldest records go. 0 means no bound on entries. */
export interface DeadLetterBounds {
  maxBytes: number;
  maxEntries: number;
}

export interface DeadLetterUsage {
  entries: number;
  bytes: number;
}

export interface AppendOutcome {
  /** Records removed to stay within the bound, oldest first. */
  evicted: number;
  usage: DeadLetterUsage;
}

export interface DeadLetterStore {
  /** Where the dead letters live, for messages: a directory, `s3://bucket/prefix/`, ... */
  readonly location: string;
  /** Appends one group durably, then evicts the oldest records past the bound. */
  append(records: readonly DeadLetterRecord[], signal: AbortSignal): Promise<AppendOutcome>;
  /** Every record held, oldest first. */
  list(signal: AbortSignal): Promise<DeadLetterRecord[]>;
  /**
   * Removes the records named in `remove` and rewrites those named in `update` (a replay refused
   * again keeps the new detail); returns how many were removed.
   */
  rewrite(
    remove: ReadonlySet<string>,
    update: ReadonlyMap<string, DeadLetterRecord>,
    signal: AbortSignal,
  ): Promise<number>;
  /** Reads what the store holds now (sizes and counts only where the backend allows) for the gauges. */
  refresh(signal: AbortSignal): Promise<DeadLetterUsage>;
  /** What the store held after its last operation (the gauges); undefined before the first. */
  usage(): DeadLetterUsage | undefined;
  close(): Promise<void>;
}

// The sink seam. The pipeline knows only this file; concrete sinks live in sibling folders.
import type { Batch, LogEntry } from "../model.ts";
import { Sf2LokiError } from "../errors.ts";

/** Entries the sink gave up on for good (isolated poison entries), counted once by the pipeline. */
export interface DroppedEntries {
  readonly entries: readonly LogEntry[];
  /**
   * Low-cardinality: `bad_request`, `oversized_413`, `permanent`, `budget`, and Loki's limits:
   * `too_old`, `too_far_in_future`, `too_far_behind`, `line_too_long`, `metadata_too_large`,
   * `metadata_disallowed`, `label_limits`.
   */
  readonly reason: string;
  /**
   * What refused them, in the refuser's words (Loki's message for these entries, or the local limit
   * they would have broken): kept with each dead letter so an operator sees why without Loki's logs.
   */
  readonly detail?: string;
}

export interface PushResult {
  /** Entries isolated and dropped while the rest of the batch was delivered. */
  readonly dropped: readonly DroppedEntries[];
}

/**
 * Told of each group the moment the sink gives up on it, so drops are counted while a long push
 * is still isolating the rest. Every group told here is also in the result's `dropped`; a retried
 * push may tell the same entries again, so a listener counts each entry once.
 */
export type DropListener = (group: DroppedEntries) => void;

/**
 * Told of entries Loki stored while the rest of the push is still open (a part of a split push
 * answered 2xx, or a 400 stored every entry it did not name). A retry of the push sends none of them
 * again: a re-sent copy of a stored entry is one more sample for every LogQL metric query.
 */
export type LandListener = (entries: readonly LogEntry[]) => void;

/**
 * The lane's HTTP requests at the destination (#37): every request a push sends holds one slot while
 * it is open, so `max_in_flight` bounds what the receiver sees however the sink cuts a batch.
 */
export interface RequestSlots {
  /** Resolves with the slot's release once one is free; rejects when `signal` aborts first. */
  take(signal?: AbortSignal): Promise<() => void>;
}

export interface Sink {
  /**
   * Delivers the batch, or throws RetryableSinkError (nothing is lost: retry what was not told landed) or
   * PermanentSinkError (the whole batch is refused for good). Anything else is a crash. With `slots`,
   * each request it sends to the destination holds one of them while open.
   */
  push(
    batch: Batch,
    signal?: AbortSignal,
    onDropped?: DropListener,
    onLanded?: LandListener,
    slots?: RequestSlots,
  ): Promise<PushResult>;
  close(): Promise<void>;
}

/** The data is fine; delivery did not happen. `retryAfterMs` carries the server's request, if any. */
export class RetryableSinkError extends Sf2LokiError {
  readonly retryAfterMs: number | undefined;
  constructor(message: string, options?: { cause?: unknown; retryAfterMs?: number }) {
    super("SF2LOKI_SINK_RETRYABLE", message, options);
    this.retryAfterMs = options?.retryAfterMs;
  }
}

export class PermanentSinkError extends Sf2LokiError {
  readonly reason: string;
  constructor(message: string, reason = "permanent", options?: { cause?: unknown }) {
    super("SF2LOKI_SINK_PERMANENT", message, options);
    this.reason = reason;
  }
}

/** What a lookup found: the entries Loki holds, and the read requests it took to find out. */
export interface StoredAnswer {
  readonly stored: ReadonlySet<LogEntry>;
  readonly queries: number;
}

/**
 * Loki's read path, asked before a re-read entry is pushed again (#27): a copy Loki already holds is
 * not sent twice. A sink that can answer implements it beside `Sink`; the pipeline knows only this.
 */
export interface StoredLookup {
  /**
   * Of `entries`, those Loki holds: the same stream, timestamp and line. Throws StoredLookupError
   * when the read path cannot answer; the caller then pushes them anyway (at-least-once).
   */
  stored(entries: readonly LogEntry[], signal: AbortSignal): Promise<StoredAnswer>;
  /**
   * How far back `stored` can see entries Loki has not flushed yet (a Loki querier asks its ingesters
   * only within `query_ingesters_within`). Absent: no such horizon.
   */
  horizon?(signal: AbortSignal): Promise<LookupHorizon>;
  /**
   * Present only when the operator allows it (`sink.loki.reconcile.flush_url`): flushes Loki's
   * ingester, so that entries past the horizon are visible to `stored` from then on.
   */
  flush?(signal: AbortSignal): Promise<void>;
}

/** How far back a lookup sees unflushed entries, and where that was learnt. */
export interface LookupHorizon {
  /** Entries dated more than this many ms before now may be invisible; undefined: none are. */
  readonly ms: number | undefined;
  /** `config` (read from Loki's /config), `setting` (configured) or `assumed` (Loki's default). */
  readonly source: "config" | "setting" | "assumed";
  /** Why it was assumed. */
  readonly why?: string;
}

/** The read path did not answer; `reason` is low-cardinality (`refused`, `unreachable`, `timeout`, `unreadable`). */
export class StoredLookupError extends Sf2LokiError {
  readonly reason: string;
  readonly queries: number;
  constructor(message: string, reason: string, queries: number, options?: { cause?: unknown }) {
    super("SF2LOKI_LOOKUP_FAILED", message, options);
    this.reason = reason;
    this.queries = queries;
  }
}

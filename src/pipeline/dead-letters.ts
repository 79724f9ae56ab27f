// The dead-letter seam: where the pipeline hands over entries Loki refused for good, so they are kept
// for an operator to read and send again instead of only being counted. The pipeline knows this
// interface only; the store behind it is built by the wiring (src/deadletter/).
import type { LogEntry } from "../model.ts";

/** Entries refused together, for one reason, in the refuser's words. */
export interface DeadLetterGroup {
  readonly entries: readonly LogEntry[];
  /** Low-cardinality, as counted in `sf2loki_loki_entries_dropped`: `bad_request`, `oversized_413`, ... */
  readonly reason: string;
  /** Loki's message for these entries, or the local limit they broke. */
  readonly detail: string;
}

export interface DeadLetterSink {
  /**
   * Keeps the group. Never rejects and returns within a bounded time: a failed write is retried a few
   * times, then logged and counted. The push awaits it, so the checkpoint moves past these entries
   * only once they were kept (or given up on loudly), never before.
   */
  keep(group: DeadLetterGroup, signal: AbortSignal): Promise<void>;
}

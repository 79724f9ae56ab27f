// One flushed batch on its way to the sink and the store (spec B §1.3, §2.7, §2.8).
import type { LogEntry } from "../model.ts";
import type { StreamSpans } from "./stream-spans.ts";

export type BatchState = "pushing" | "ready" | "abandoned";

export class PendingBatch {
  /** Position in its lane: commits are applied strictly in this order. */
  readonly seq: number;
  /** Real entries in the batch; still counted after `delivered()` let go of them. */
  readonly entries: number;
  /** The commit view collapsed to the last value per key, in batch order. */
  readonly commits: Map<string, string>;
  /** Entries in the batch, checkpoint-only ones included. */
  readonly size: number;
  state: BatchState = "pushing";
  /** Set by this batch's first retryable failure, cleared when the sink answers for good. */
  failingSince: { monoMs: number; wallMs: number } | undefined;
  /** Per stream, the batch's oldest and newest timestamp (set when Loki's window is kept). */
  spans: StreamSpans | undefined;
  /** Entries to look up in Loki before the push: what the previous run may have pushed (#27). */
  lookups: LogEntry[] | undefined;
  #pushView: readonly LogEntry[];

  /** Takes `entries` over: when all are real (the common case) they are the push view, uncopied. */
  constructor(seq: number, entries: readonly LogEntry[]) {
    this.seq = seq;
    this.size = entries.length;
    this.commits = new Map();
    // Runs of one key are the common case: touch the map once per run, not once per entry.
    let key: string | undefined;
    let value = "";
    let tokens = 0;
    for (const entry of entries) {
      if (entry.checkpointOnly) tokens++;
      const token = entry.checkpoint;
      if (token.key !== key) {
        if (key !== undefined) this.commits.set(key, value);
        key = token.key;
      }
      value = token.value;
    }
    if (key !== undefined) this.commits.set(key, value);
    this.#pushView = tokens === 0 ? entries : entries.filter((e) => !e.checkpointOnly);
    this.entries = this.#pushView.length;
  }

  /** Real entries only, in queue order: what one Sink.push carries. Empty once delivered. */
  get pushView(): readonly LogEntry[] {
    return this.#pushView;
  }

  /** Loki already holds these (a resumed run's lookup found them): the push leaves them out. */
  skip(stored: ReadonlySet<LogEntry>): void {
    if (stored.size > 0) this.#pushView = this.#pushView.filter((e) => !stored.has(e));
  }

  /**
   * Loki answered for good (accepted, or refused and dead-lettered): only the checkpoints are still
   * needed. Letting go of the entries here, not at the commit, frees them while the batch waits for
   * the store, and keeps them from outliving the young generation only because the store is slow.
   */
  delivered(): void {
    this.#pushView = [];
  }
}

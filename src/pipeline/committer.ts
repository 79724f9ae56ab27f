// The ordered commit window of one lane. Up to `maxInFlight` batches may be outstanding (pushed or
// pushing, not yet committed); their commits are applied strictly in batch order, so a batch that
// is still retrying holds back every commit behind it, and a full window holds back the consumer
// (and through the queue, the sources). Batches that are settled together at the head of the window
// are written in one commitMany: fewer store writes, same order, later values win.
import type { CheckpointStore } from "../state/store.ts";
import type { AbandonedKeys } from "./abandoned.ts";
import type { PendingBatch } from "./batch.ts";
import { Waiters } from "./waiters.ts";

export interface CommitterDeps {
  store: CheckpointStore;
  abandoned: AbandonedKeys;
  maxInFlight: number;
  /** After each successful store write, with exactly what was written. */
  onCommitted: (commits: ReadonlyMap<string, string>) => void;
  /** A store write failed: the run must stop (spec B §2.10). */
  onError: (err: unknown) => void;
}

export class OrderedCommitter {
  readonly #deps: CommitterDeps;
  readonly #window: PendingBatch[] = [];
  readonly #changed = new Waiters();
  /** How many batches at the head are part of the store write in progress. */
  #writing = 0;
  #cancelled = false;

  constructor(deps: CommitterDeps) {
    this.#deps = deps;
  }

  get outstanding(): readonly PendingBatch[] {
    return this.#window;
  }

  /** Waits for a free slot, then appends `batch` behind every outstanding one. */
  async admit(batch: PendingBatch): Promise<void> {
    while (this.#window.length >= this.#deps.maxInFlight) await this.#changed.wait();
    this.#window.push(batch);
  }

  /** The batch's push ended; commit it (or record its abandonment) once everything ahead is done. */
  settle(batch: PendingBatch, state: "ready" | "abandoned"): void {
    batch.state = state;
    if (this.#writing === 0 && this.#window[0] === batch) {
      this.#drain().catch((err: unknown) => {
        this.#deps.onError(err);
      });
    }
  }

  /** Resolves when every admitted batch is committed or abandoned. */
  async drained(): Promise<void> {
    while (this.#window.length > 0) await this.#changed.wait();
  }

  /** Stops committing and rejects anyone waiting; a store write already started runs to its end. */
  cancel(reason: Error): void {
    this.#cancelled = true;
    // Nothing behind the write in progress can commit any more; keeping it would hold the batch
    // (and its bytes) until the next run.
    this.#window.splice(this.#writing);
    this.#changed.fail(reason);
  }

  /** Outstanding batches that no store write in progress covers (for a forced teardown). */
  uncommitted(): readonly PendingBatch[] {
    return this.#window.slice(this.#writing);
  }

  async #drain(): Promise<void> {
    const { abandoned, store } = this.#deps;
    while (!this.#cancelled) {
      let n = 0;
      const merged = new Map<string, string>();
      for (const batch of this.#window) {
        if (batch.state === "pushing") break;
        n++;
        if (batch.state === "abandoned") {
          abandoned.add(batch.commits.keys(), batch.pushView.length, "Shutdown drain abandoned a batch");
          continue;
        }
        for (const [key, value] of batch.commits) if (!abandoned.has(key)) merged.set(key, value);
      }
      if (n === 0) return;
      if (merged.size > 0) {
        this.#writing = n;
        try {
          await store.commitMany(Object.fromEntries(merged));
        } finally {
          this.#writing = 0;
        }
        // Reported even if the run was torn down meanwhile: the write did happen.
        this.#deps.onCommitted(merged);
      }
      this.#window.splice(0, n);
      this.#changed.wakeAll();
    }
  }
}

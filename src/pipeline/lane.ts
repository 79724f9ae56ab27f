// One lane (spec B §2.2, §2.6): its queue, the batcher that drains it, the pushes it starts and the
// ordered commit window they settle into. The batcher flushes on max_entries (checkpoint-only entries
// count), on max_bytes (Σ lineBytes + 64 over real entries), or flush_interval after the batch's
// first item; it ends only when every producer of the lane has sent its end-of-stream marker.
import type { LogEntry } from "../model.ts";
import type { LaneName } from "../sources/source.ts";
import type { Clock } from "../util/clock.ts";
import type { BatchSettings } from "./settings.ts";
import { PendingBatch } from "./batch.ts";
import { OrderedCommitter, type CommitterDeps } from "./committer.ts";
import { ENTRY_OVERHEAD_BYTES } from "./cost.ts";
import type { IngestTally } from "./ingest-tally.ts";
import { END_OF_STREAM, LaneQueue } from "./lane-queue.ts";
import { pushBatch, type PushDeps, type PushOutcome } from "./push.ts";
import type { Reconciler } from "./reconcile.ts";
import { streamSpans } from "./stream-spans.ts";
import { StreamWindow } from "./stream-window.ts";
import { ignore } from "./abort.ts";
import { Slots } from "../util/slots.ts";

export interface LaneDeps {
  settings: BatchSettings;
  clock: Clock;
  push: PushDeps;
  commit: CommitterDeps;
  /** The route's resume lookups (#27); shared by its lanes, so its budget is per destination. */
  reconciler: Reconciler;
  /** Keeps a background task's promise: a rejection stops the run. */
  track: (task: Promise<unknown>) => void;
}

export interface LaneStatus {
  queued_entries: number;
  queued_bytes: number;
  /** Entries taken off the queue into a batch not yet admitted to the commit window. */
  batching_entries: number;
  /** Batches whose push has not ended yet (including ones waiting to retry). */
  in_flight: number;
  /** Batches pushed (or dropped) that wait for an earlier one before they commit. */
  awaiting_commit: number;
  /** Wall-clock ms of the oldest unresolved retryable failure, or null. */
  failing_since: number | null;
}

export class Lane {
  readonly name: LaneName;
  readonly queue: LaneQueue;
  readonly committer: OrderedCommitter;
  readonly tallies: IngestTally[] = [];
  /** Producers feeding this lane; the batcher ends after this many end-of-stream markers. */
  producers = 0;
  readonly #deps: LaneDeps;
  #batch: LogEntry[] = [];
  #batchBytes = 0;
  #deadline = 0;
  /** The flush timer is running; at most one per lane (see #armTimer). */
  #timerArmed = false;
  readonly #timerStop = new AbortController();
  #seq = 0;
  /** A flushed batch still waiting for a slot in the commit window. */
  #admitting: PendingBatch | undefined;
  #cancelled = false;
  /** Loki's out-of-order window per stream, over this lane's pushes. */
  readonly #window: StreamWindow;
  /**
   * The lane's requests at the destination: max_in_flight, however a sink cuts its batches (#37).
   * A batch of several streams may send some of them at once; together they stay within the bound.
   */
  readonly #slots: Slots;

  constructor(name: LaneName, deps: LaneDeps) {
    this.name = name;
    this.#deps = deps;
    this.#window = new StreamWindow(deps.settings.out_of_order_window_ms);
    this.#slots = new Slots(deps.settings.max_in_flight);
    this.queue = new LaneQueue(deps.settings.queue_maxsize, deps.settings.queue_max_bytes);
    this.committer = new OrderedCommitter(deps.commit);
  }

  /** The batcher: resolves once every producer finished and every batch is committed or abandoned. */
  async consume(): Promise<void> {
    const { max_entries, max_bytes, flush_interval_ms } = this.#deps.settings;
    const clock = this.#deps.clock;
    const queue = this.queue;
    let live = this.producers;
    try {
      while (live > 0 && !this.#cancelled) {
        const item = queue.take();
        if (item === undefined) {
          if (this.#batch.length > 0 && clock.monotonic() >= this.#deadline) await this.#flush();
          else await this.#waitForItem();
        } else if (item === END_OF_STREAM) {
          live--;
        } else {
          if (this.#batch.push(item) === 1) this.#deadline = clock.monotonic() + flush_interval_ms;
          if (!item.checkpointOnly) this.#batchBytes += item.lineBytes + ENTRY_OVERHEAD_BYTES;
          if (this.#batch.length >= max_entries || this.#batchBytes >= max_bytes) await this.#flush();
        }
      }
      if (this.#cancelled) return;
      await this.#flush();
      await this.committer.drained();
    } catch (err) {
      if (!this.#cancelled) throw err;
    } finally {
      this.#stopTimer();
    }
  }

  /**
   * Tears the lane down: waiting producers and the batcher wake with `reason`, and the lane lets go of
   * every entry it still holds (queued, or in the batch being built). None of them will be pushed or
   * committed by this run; the next term reads from the checkpoints. Whoever counts them as abandoned
   * does so before (uncommitted()). Until the next run replaces this one, /statusz shows a standby
   * holding nothing, and the entries' memory is free.
   */
  cancel(reason: Error): void {
    this.#cancelled = true;
    this.queue.cancel(reason);
    this.committer.cancel(reason);
    this.#batch = [];
    this.#batchBytes = 0;
    this.#admitting = undefined;
  }

  /** Everything admitted but not committed: outstanding batches, the batch being built, the queue. */
  uncommitted(): { keys: Set<string>; entries: number } {
    const keys = new Set<string>();
    let entries = 0;
    const batches = [...this.committer.uncommitted()];
    if (this.#admitting) batches.push(this.#admitting);
    for (const batch of batches) {
      for (const key of batch.commits.keys()) keys.add(key);
      entries += batch.entries;
    }
    for (const entry of [...this.#batch, ...this.queue.queuedEntries()]) {
      keys.add(entry.checkpoint.key);
      if (!entry.checkpointOnly) entries++;
    }
    return { keys, entries };
  }

  status(): LaneStatus {
    let inFlight = 0;
    let failing: number | undefined;
    for (const batch of this.committer.outstanding) {
      if (batch.state === "pushing") inFlight++;
      const since = batch.failingSince?.wallMs;
      if (since !== undefined && (failing === undefined || since < failing)) failing = since;
    }
    return {
      queued_entries: this.queue.size,
      queued_bytes: this.queue.bytes,
      batching_entries: this.#batch.length + (this.#admitting?.size ?? 0),
      in_flight: inFlight,
      awaiting_commit: this.committer.outstanding.length - inFlight,
      failing_since: failing ?? null,
    };
  }

  /** Monotonic ms of the oldest unresolved retryable failure in this lane (spec B §2.11). */
  failingSince(): number | undefined {
    let min: number | undefined;
    for (const batch of this.committer.outstanding) {
      const since = batch.failingSince?.monoMs;
      if (since !== undefined && (min === undefined || since < min)) min = since;
    }
    return min;
  }

  async #waitForItem(): Promise<void> {
    // Started only if the batcher actually runs dry before the batch fills.
    if (this.#batch.length > 0 && !this.#timerArmed) this.#armTimer();
    await this.queue.waitForItem();
  }

  /**
   * One flush timer per lane, not one per batch: a batch that fills before its deadline leaves the
   * timer running, and when it fires it wakes the batcher only for a batch whose deadline has passed,
   * or sleeps on to the deadline of the batch being built now. Cancelling a timer per batch cost two
   * exceptions built with their stacks (the abort reason and Node's AbortError), ~13 µs a batch.
   */
  #armTimer(): void {
    this.#timerArmed = true;
    const clock = this.#deps.clock;
    clock.sleep(this.#deadline - clock.monotonic(), this.#timerStop.signal).then(() => {
      this.#timerArmed = false;
      if (this.#batch.length === 0) return;
      if (clock.monotonic() >= this.#deadline) this.queue.wakeConsumer();
      else this.#armTimer();
    }, ignore);
  }

  #stopTimer(): void {
    if (this.#timerArmed) this.#timerStop.abort();
  }

  async #flush(): Promise<void> {
    if (this.#batch.length === 0) return;
    const batch = new PendingBatch(this.#seq++, this.#batch);
    this.#batch = [];
    this.#batchBytes = 0;
    for (const tally of this.tallies) tally.flush();
    this.#admitting = batch;
    await this.committer.admit(batch);
    this.#admitting = undefined;
    if (batch.entries === 0) {
      // Only checkpoint tokens: nothing to push, but the commit still waits its turn.
      this.committer.settle(batch, "ready");
      return;
    }
    // Both in batch order, before any await: the window sees every earlier batch's streams, and the
    // resume's per-key counts follow the order entries are pushed in.
    if (this.#window.enabled) batch.spans = streamSpans(batch.pushView);
    this.#deps.reconciler.select(batch);
    this.#deps.track(this.#push(batch));
  }

  async #push(batch: PendingBatch): Promise<void> {
    const cancelled = this.#deps.push.cancelled;
    let outcome: PushOutcome = "abandoned";
    try {
      if (batch.lookups) await this.#deps.reconciler.apply(batch, cancelled);
      if (await this.#windowClear(batch)) {
        outcome =
          batch.pushView.length === 0 ? "delivered" : await pushBatch(batch, this.#deps.push, this.#slots);
      }
    } catch (err) {
      if (!cancelled.aborted && !this.#cancelled) throw err;
    }
    if (outcome === "abandoned") this.#window.abandon(batch);
    this.committer.settle(batch, outcome === "abandoned" ? "abandoned" : "ready");
  }

  /**
   * Waits until no earlier batch still pushing holds `batch` back (stream-window.ts); false when a
   * batch this run abandoned does: then it is abandoned too, and the next run sends both.
   */
  async #windowClear(batch: PendingBatch): Promise<boolean> {
    for (;;) {
      const verdict = this.#window.verdict(batch, this.committer.outstanding);
      if (verdict !== "wait") return verdict === "clear";
      await this.committer.changed();
    }
  }
}

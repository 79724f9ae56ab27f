// One producer per source (spec B §2.4): pull an entry (or a run of them), stamp static labels and
// ingest metrics on real entries, charge its cost, enqueue. The next item is pulled only after the
// previous one was admitted, so a full lane stops the source itself. On a normal end an end-of-stream marker follows.
import { sameLabelSet, type Labels, type LogEntry } from "../model.ts";
import { isRun, type CheckpointReader, type Source, type SourceItem } from "../sources/source.ts";
import type { Clock } from "../util/clock.ts";
import { entryCost, mapChars } from "./cost.ts";
import type { IngestTally } from "./ingest-tally.ts";
import { END_OF_STREAM, type LaneQueue } from "./lane-queue.ts";
import { ignore, isAbortFrom } from "./abort.ts";
// One turn of the event loop: pending I/O callbacks and timers run before the producer goes on.
import { setImmediate as nextTurn } from "node:timers/promises";

export interface ProducerDeps {
  source: Source;
  state: CheckpointReader;
  queue: LaneQueue;
  tally: IngestTally;
  clock: Clock;
  /** Merged over every real entry's labels; static wins. */
  staticLabels: Labels;
  /**
   * Handed to the source: it ends its stream when the run stops or is cancelled. An AbortError the
   * source throws after it fired is a normal end, not a source failure.
   */
  sourceSignal: AbortSignal;
  /** Aborts when the run is torn down; a producer then leaves without a marker. */
  cancelled: AbortSignal;
}

export class Producer {
  readonly #deps: ProducerDeps;
  readonly #hasStatic: boolean;
  // A run of entries with equal label sets (a source usually builds a fresh but equal object per
  // entry) is merged and measured once, and its entries all carry the one merged object.
  #labelsIn: Labels | undefined;
  #labelsOut: Labels = {};
  #labelsChars = 0;

  constructor(deps: ProducerDeps) {
    this.#deps = deps;
    this.#hasStatic = Object.keys(deps.staticLabels).length > 0;
  }

  /** Resolves when the source ended and the marker is queued, or when the run was cancelled. */
  async run(): Promise<void> {
    const { queue, cancelled } = this.#deps;
    try {
      await this.#pump();
      await queue.put(END_OF_STREAM, 0, cancelled);
    } catch (err) {
      if (!cancelled.aborted) throw err;
    }
  }

  async #pump(): Promise<void> {
    const { source, state, sourceSignal } = this.#deps;
    const it = source.events(state, sourceSignal)[Symbol.asyncIterator]();
    for (;;) {
      let next: IteratorResult<SourceItem>;
      try {
        next = await it.next();
      } catch (err) {
        if (isAbortFrom(err, sourceSignal)) return;
        throw err;
      }
      if (next.done === true) return;
      const item = next.value;
      try {
        if (!isRun(item)) {
          const wait = this.#enqueue(item, this.#deps.clock.now());
          if (wait) await wait;
        } else if (item.length > 0) {
          // One clock read per run: its entries arrived together. `await` only on a full lane: an
          // await of nothing still costs a microtask turn per entry.
          const now = this.#deps.clock.now();
          for (let i = 0; i < item.length; i++) {
            const wait = this.#enqueue(item[i]!, now);
            if (wait) await wait;
          }
          // A source whose data is already buffered (a downloaded CSV chunk) would otherwise run on in
          // microtasks until the lane is full, ~10 000 entries and ~40 ms of CPU, before any I/O is
          // served: each step of a checkpoint write, each push's answer and /healthz waited that long,
          // so the commit window filled with batches Loki had long accepted and the queue sat full.
          await nextTurn();
        }
      } catch (err) {
        // Torn down while waiting for room: let the source release what it holds.
        await it.return?.().catch(ignore);
        throw err;
      }
    }
  }

  /** Admits and queues one entry; a promise only when the lane is full and it must wait for room. */
  #enqueue(entry: LogEntry, nowMs: number): Promise<void> | undefined {
    const cost = entry.checkpointOnly ? 0 : this.#admit(entry, nowMs);
    if (this.#deps.queue.tryPut(entry, cost)) return undefined;
    return this.#deps.queue.put(entry, cost, this.#deps.cancelled);
  }

  /** Static labels, ingest metrics and the queue cost of a real entry. */
  #admit(entry: LogEntry, nowMs: number): number {
    // The source's own `org` (multi-org), read before the static labels are merged in.
    const org = entry.labels.org;
    if (this.#labelsIn === undefined || !sameLabelSet(entry.labels, this.#labelsIn)) {
      this.#labelsIn = entry.labels;
      this.#labelsOut = this.#hasStatic ? { ...entry.labels, ...this.#deps.staticLabels } : entry.labels;
      this.#labelsChars = mapChars(this.#labelsOut);
    }
    // Equal sets leave as one shared object, so the sink groups them by identity, not by content.
    entry.labels = this.#labelsOut;
    this.#deps.tally.record(entry, nowMs, org);
    return entryCost(entry, this.#labelsChars);
  }
}

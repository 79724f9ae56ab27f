// Loki's out-of-order window, kept per stream across a lane's pushes (#27). A Loki stream takes an
// entry only if it is at most max_chunk_age/2 older than the newest entry it already holds; an older
// one is refused for good ("entry too far behind"). With several pushes in flight, a later batch of a
// stream can land while an earlier one is still retrying; if the later one reached further than the
// window past the earlier one's oldest entry, the earlier batch (its retry, or its re-send by the next
// run after a crash) would be refused and lost.
//
// So a batch is pushed only when, for every stream in it, its newest entry is within the window of the
// oldest entry that an earlier, unanswered batch holds of that stream. Whatever of a stream Loki has
// not stored is then always inside the window of everything it has stored. A batch abandoned by a
// stopping run is re-sent by the next one, so it holds back the rest of this run for good.
import type { PendingBatch } from "./batch.ts";

export type WindowVerdict = "clear" | "wait" | "abandon";

export class StreamWindow {
  readonly #windowNs: bigint;
  /** Per stream, the oldest entry of any batch this run abandoned: the next run re-sends it. */
  readonly #abandoned = new Map<string, bigint>();

  /** `windowMs` is max_chunk_age / 2; 0 turns the window off. */
  constructor(windowMs: number) {
    this.#windowNs = BigInt(Math.max(0, Math.floor(windowMs))) * 1_000_000n;
  }

  get enabled(): boolean {
    return this.#windowNs > 0n;
  }

  /**
   * Whether `batch` may be pushed now, given the lane's outstanding batches (in order): "wait" while
   * an earlier batch still pushing holds it back, "abandon" when an abandoned one does (for good).
   */
  verdict(batch: PendingBatch, outstanding: readonly PendingBatch[]): WindowVerdict {
    const spans = batch.spans;
    if (spans === undefined || spans.size === 0) return "clear";
    const w = this.#windowNs;
    for (const [stream, { max }] of spans) {
      const abandoned = this.#abandoned.get(stream);
      if (abandoned !== undefined && max - abandoned > w) return "abandon";
    }
    for (const earlier of outstanding) {
      if (earlier === batch) break;
      if (earlier.state !== "pushing" || earlier.spans === undefined) continue;
      for (const [stream, { max }] of spans) {
        const theirs = earlier.spans.get(stream);
        if (theirs !== undefined && max - theirs.min > w) return "wait";
      }
    }
    return "clear";
  }

  /** `batch` will not be pushed by this run: no later batch may run past the window of its entries. */
  abandon(batch: PendingBatch): void {
    for (const [stream, { min }] of batch.spans ?? []) {
      const held = this.#abandoned.get(stream);
      if (held === undefined || min < held) this.#abandoned.set(stream, min);
    }
  }
}

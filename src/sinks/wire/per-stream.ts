// One stream per request. Loki 3.4.6's ingester answers a push with the result of the stream it
// appended last (instance.Push keeps only that stream's error), so an earlier stream's refusal is
// lost when a later one is stored whole: measured against the real binary, 'entry too far behind'
// of stream A followed by stream B stored answers 204, and A's entries are gone with nobody told.
// Sent alone, every stream's answer is its own. A batch's streams still travel together: at most
// STREAM_CONCURRENCY requests at once, the batch done when all are, and a stream stored while
// another failed is told as landed so the pipeline's retry does not send it twice.
import type { LogEntry } from "../../model.ts";
import { groupStreams } from "../loki/streams.ts";
import type { LandListener } from "../sink.ts";
import type { PushDrops } from "./drops.ts";

/** Requests of one batch in flight at once: enough for a batch of a few topics to go in one RTT. */
export const STREAM_CONCURRENCY = 4;

export interface PerStreamContext {
  /** Extra isolation requests of the batch; each stream gets its share (at least 2). */
  readonly budget: number;
  readonly drops: PushDrops;
  readonly onLanded: LandListener | undefined;
}

/**
 * Delivers `entries` one stream per request through `deliver`. A single stream goes as is. With
 * several, what `deliver` stored of each stream it completes is told to `ctx.onLanded`; once one fails no other
 * starts, those in flight finish, and the first failure is thrown.
 */
export async function deliverPerStream<C extends PerStreamContext>(
  entries: readonly LogEntry[],
  ctx: C,
  deliver: (stream: readonly LogEntry[], ctx: C) => Promise<void>,
): Promise<void> {
  const streams = groupStreams(entries).map((g) => g.entries);
  if (streams.length <= 1) {
    await deliver(entries, ctx);
    return;
  }
  const budget = Math.max(2, Math.ceil(ctx.budget / streams.length));
  const told = new Set<LogEntry>();
  const onLanded: LandListener = (landed) => {
    for (const e of landed) told.add(e);
    ctx.onLanded?.(landed);
  };
  const share: C = { ...ctx, budget, onLanded };
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < streams.length && failure === undefined) {
      const stream = streams[next++]!;
      try {
        await deliver(stream, share);
        // The stream is done: what it did not drop was stored. Each entry is told once.
        const rest = stream.filter((e) => !ctx.drops.has(e) && !told.has(e));
        if (rest.length > 0) onLanded(rest);
      } catch (err) {
        failure ??= { err };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(STREAM_CONCURRENCY, streams.length) }, worker));
  if (failure !== undefined) throw failure.err;
}

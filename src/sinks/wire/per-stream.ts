// One stream per request, unless the streams cannot be refused unseen. Loki 3.4.6's ingester answers a
// push with the result of the stream it appended last (instance.Push keeps only that stream's error),
// so an earlier stream's refusal is lost when a later one is stored whole: measured against the real
// binary, 'entry too far behind' of stream A followed by stream B stored answers 204, and A's entries
// are gone with nobody told. Sent alone, every stream's answer is its own. Streams Loki cannot refuse
// at its ingester (accepted-streams.ts) share one request, so a lane of many live topics costs no more
// requests than one topic. A batch's requests still travel together: at most STREAM_CONCURRENCY at
// once (and the lane's slots bound them further), the batch done when all are, and a request stored
// while another failed is told as landed so the pipeline's retry does not send it twice.
import type { LogEntry } from "../../model.ts";
import { groupStreams } from "../receiving-loki/streams.ts";
import type { LandListener } from "../sink.ts";
import type { AcceptedStreams, PushStream } from "./accepted-streams.ts";
import type { PushDrops } from "./drops.ts";

/** Requests of one batch in flight at once: enough for a batch of a few topics to go in one RTT. */
export const STREAM_CONCURRENCY = 4;

export interface PerStreamContext {
  /** Extra isolation requests of the batch; each request gets its share (at least 2). */
  readonly budget: number;
  readonly drops: PushDrops;
  readonly onLanded: LandListener | undefined;
}

/**
 * Delivers `entries` through `deliver`, one request per stream except the streams `accepted` lets
 * share one. A single request goes as is. With several, what `deliver` stored of each request it
 * completes is told to `ctx.onLanded`; once one fails no other starts, those in flight finish, and the
 * first failure is thrown. What Loki stored whole is remembered in `accepted`; what it refused or
 * failed is forgotten there, so it goes alone next time.
 */
export async function deliverPerStream<C extends PerStreamContext>(
  entries: readonly LogEntry[],
  ctx: C,
  deliver: (request: readonly LogEntry[], ctx: C) => Promise<void>,
  accepted?: AcceptedStreams,
): Promise<void> {
  const streams = groupStreams(entries);
  const requests = accepted ? accepted.plan(streams) : streams.map((s) => [s]);
  if (requests.length <= 1) {
    try {
      await deliver(entries, ctx);
    } catch (err) {
      for (const s of streams) accepted?.forget(s);
      throw err;
    }
    learn(accepted, streams, ctx.drops);
    return;
  }
  const budget = Math.max(2, Math.ceil(ctx.budget / requests.length));
  const told = new Set<LogEntry>();
  const onLanded: LandListener = (landed) => {
    for (const e of landed) told.add(e);
    ctx.onLanded?.(landed);
  };
  const share: C = { ...ctx, budget, onLanded };
  let next = 0;
  let failure: { err: unknown } | undefined;
  const worker = async (): Promise<void> => {
    while (next < requests.length && failure === undefined) {
      const request = requests[next++]!;
      const body = request.length === 1 ? request[0]!.entries : request.flatMap((s) => s.entries);
      try {
        await deliver(body, share);
      } catch (err) {
        for (const s of request) accepted?.forget(s);
        failure ??= { err };
        continue;
      }
      // The request is done: what it did not drop was stored. Each entry is told once.
      const rest = body.filter((e) => !ctx.drops.has(e) && !told.has(e));
      if (rest.length > 0) onLanded(rest);
      learn(accepted, request, ctx.drops);
    }
  };
  await Promise.all(Array.from({ length: Math.min(STREAM_CONCURRENCY, requests.length) }, worker));
  if (failure !== undefined) throw failure.err;
}

/** A stream stored whole is accepted; one Loki refused any entry of is forgotten. */
function learn(
  accepted: AcceptedStreams | undefined,
  streams: readonly PushStream[],
  drops: PushDrops,
): void {
  if (!accepted) return;
  for (const s of streams) {
    if (s.entries.some((e) => drops.has(e))) accepted.forget(s);
    else accepted.accepted(s);
  }
}

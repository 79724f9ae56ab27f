// What every push to a Loki does, through its push API or its OTLP endpoint: real entries only, lines
// capped (batch.max_line_bytes), what Loki's limits would refuse dropped before sending, then the rest
// delivered one stream per request, or together where Loki cannot refuse them unseen (wire/per-stream.ts). Only how a stream is delivered is the sink's.
import type { Counter } from "@opentelemetry/api";
import type { Batch, LogEntry } from "../../model.ts";
import type { Clock } from "../../util/clock.ts";
import type { DropListener, LandListener, PushResult, RequestSlots } from "../sink.ts";
import type { AcceptedStreams } from "../wire/accepted-streams.ts";
import { PushDrops } from "../wire/drops.ts";
import { capLines } from "../wire/line-cap.ts";
import { deliverPerStream } from "../wire/per-stream.ts";
import { checkLimits, type LokiLimits } from "./limits.ts";

export interface PreparedPush {
  /** The batch's real entries. */
  readonly entries: readonly LogEntry[];
  /** What is left to send once the local checks dropped theirs. */
  readonly send: readonly LogEntry[];
  /** This push's drops so far (the local ones), told to the listener already. */
  readonly drops: PushDrops;
}

export interface PrepareOptions {
  maxLineBytes: number;
  limits: LokiLimits;
  nowMs: number;
  linesTruncated: Counter;
}

/**
 * Extra requests one batch may spend re-pushing what an answer left open. Loki's own answers are read
 * per entry and need none; this bounds the bisection of unreadable ones (a proxy's page, a 413): 32
 * requests isolate about two unnamed poison entries in a batch of 1000.
 */
export const ISOLATION_BUDGET = 32;

/** What the delivery of one stream's entries works with. */
export interface DeliverContext {
  /** The batch was this one entry: a refusal of it is the pipeline's Permanent. */
  readonly single: boolean;
  readonly drops: PushDrops;
  /** Extra isolation requests this stream may spend (its share of ISOLATION_BUDGET). */
  readonly budget: number;
  readonly signal: AbortSignal | undefined;
  readonly onLanded: LandListener | undefined;
  /** The lane's request slots: each request holds one while open (#37). */
  readonly slots: RequestSlots | undefined;
}

/** What a sink shapes every push by: its line cap, the Loki limits it checks, its clock, its counter. */
export interface PushShaping {
  readonly maxLineBytes: number;
  readonly limits: LokiLimits;
  readonly clock: Clock;
  readonly linesTruncated: Counter;
  /** What Loki accepted of each stream lately: streams it cannot refuse share a request (#37). */
  readonly accepted?: AcceptedStreams;
}

/** One push of `batch`: prepared, then each stream delivered by `deliver`; the drops are the result. */
export async function pushByStream(
  batch: Batch,
  shaping: PushShaping,
  listeners: {
    signal?: AbortSignal;
    onDropped?: DropListener;
    onLanded?: LandListener;
    slots?: RequestSlots;
  },
  deliver: (stream: readonly LogEntry[], ctx: DeliverContext) => Promise<void>,
): Promise<PushResult> {
  const { signal, onDropped, onLanded, slots } = listeners;
  const { maxLineBytes, limits, clock, linesTruncated } = shaping;
  const opts = { maxLineBytes, limits, nowMs: clock.now(), linesTruncated };
  const { entries, send, drops } = preparePush(batch, opts, onDropped);
  if (send.length > 0) {
    const ctx = { single: entries.length === 1, drops, budget: ISOLATION_BUDGET, signal, onLanded, slots };
    await deliverPerStream(send, ctx, deliver, shaping.accepted);
  }
  return { dropped: drops.result() };
}

export function preparePush(
  batch: Batch,
  opts: PrepareOptions,
  onDropped: DropListener | undefined,
): PreparedPush {
  // The pipeline's push view holds real entries only; the copy is for a caller that mixed in tokens.
  const entries = batch.some((e) => e.checkpointOnly) ? batch.filter((e) => !e.checkpointOnly) : batch;
  const drops = new PushDrops(onDropped);
  if (entries.length === 0) return { entries, send: entries, drops };
  // Truncation first (batch.max_line_bytes), so max_line_size refuses only what is still too long.
  capLines(entries, opts.maxLineBytes, (e) => {
    opts.linesTruncated.add(1, { source: e.labels.source ?? "unknown" });
  });
  const { send, refused } = checkLimits(entries, opts.limits, opts.nowMs);
  drops.add(refused);
  return { entries, send, drops };
}

// What every push to a Loki does first, through its push API or its OTLP endpoint: real entries only,
// lines capped (batch.max_line_bytes), then what Loki's limits would refuse dropped before sending.
import type { Counter } from "@opentelemetry/api";
import type { Batch, LogEntry } from "../../model.ts";
import type { DropListener } from "../sink.ts";
import { PushDrops } from "../wire/drops.ts";
import { capLines } from "../wire/line-cap.ts";
import { checkLimits, type LokiLimits } from "./limits.ts";

export interface PreparedPush {
  /** The batch's real entries. */
  readonly entries: readonly LogEntry[];
  /** What is left to send once the local checks dropped theirs. */
  readonly send: readonly LogEntry[];
  /** This push's drops so far (the local ones), told to the listener already. */
  readonly drops: PushDrops;
}

export function preparePush(
  batch: Batch,
  opts: { maxLineBytes: number; limits: LokiLimits; nowMs: number; linesTruncated: Counter },
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

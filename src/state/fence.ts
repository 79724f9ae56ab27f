// What HA adds to every checkpoint write: the leadership term it is made under. Every store checks the
// fence before each attempt (a retry never outlives the term), stamps the term's epoch into the document
// as `__fence_epoch__`, and refuses to write over a document already stamped by a newer term. The
// term's signal aborts a write that is still in flight when leadership ends, so a request stuck in a
// partition cannot land after the next leader has started (#17).
import type { Logger } from "../obs/logger.ts";
import { FENCE_EPOCH_KEY, lookup, type CheckpointDocument } from "./document.ts";

export interface WriteFence {
  /** Throws StateFenceError when this process may no longer write. Runs before every attempt. */
  check(): void | Promise<void>;
  /** The current term's epoch; undefined when the coordinator has none (noop). */
  epoch(): number | undefined;
  /** Aborts when the current term ends by loss, fence or resignation (never on a clean stop). */
  signal(): AbortSignal | undefined;
}

/**
 * The epoch stamped in `doc`. A non-numeric one is logged and treated as absent: the next write stamps a
 * valid one, which repairs the document, where refusing would wedge every leader until an operator
 * edits it by hand.
 */
export function storedEpoch(doc: Readonly<CheckpointDocument>, log: Logger): number | undefined {
  const raw = lookup(doc, FENCE_EPOCH_KEY);
  if (raw === undefined) return undefined;
  if (/^\d+$/.test(raw.trim())) return Number(raw);
  log.warn(
    { key: FENCE_EPOCH_KEY, value: raw },
    "the stored fence epoch is not a number; treating it as absent (the next commit rewrites it)",
  );
  return undefined;
}

/** `doc` carrying `epoch`, or `doc` itself when there is no epoch to stamp. */
export function stamped(doc: CheckpointDocument, epoch: number | undefined): CheckpointDocument {
  return epoch === undefined ? doc : { ...doc, [FENCE_EPOCH_KEY]: String(epoch) };
}

/** The lifetime signal, joined with the term's when a fence is set. */
export function writeSignal(lifetime: AbortSignal, fence: WriteFence | undefined): AbortSignal {
  const term = fence?.signal();
  return term ? AbortSignal.any([lifetime, term]) : lifetime;
}

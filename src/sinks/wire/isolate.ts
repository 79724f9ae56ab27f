// The delivery loop both sinks share: push a batch, read what the receiver's refusal names, and
// bisect only what its answer leaves open (spec B §4.8, issue #11). The receiver-specific parts (how
// a refusal is read, Loki's tenant pacing) come in as hooks; the loop owns the order and the budget.
import type { LogEntry } from "../../model.ts";
import type { LandListener } from "../sink.ts";
import type { PushDrops } from "./drops.ts";

/** A refusal of the data itself (a 400 or 413): what isolation works from. */
export interface DataRefusal {
  readonly status: number;
  /** Its words, one line, for messages and dead letters. */
  readonly detail: string;
}

export interface IsolationContext {
  readonly drops: PushDrops;
  /** Extra requests this batch may spend re-pushing what answers left open. */
  readonly budget: number;
  readonly onLanded: LandListener | undefined;
}

export interface IsolationHooks<R extends DataRefusal> {
  /** Sends one part; resolves once the receiver stored it (or settled it: see `accepted`). */
  send(part: readonly LogEntry[]): Promise<void>;
  /** The error as a refusal of the data, or undefined (anything else propagates, except `again`). */
  refusal(err: unknown): R | undefined;
  /**
   * Drops what a refusal names, tells what it says was stored, and returns what it leaves open
   * (everything, when the answer names nothing).
   */
  settle(part: readonly LogEntry[], refusal: R): readonly LogEntry[];
  /** A lone entry refused without being named: dropped, or thrown as Permanent. */
  isolated(entry: LogEntry, refusal: R): void;
  /** Pieces to send instead of `part` (Loki: above the tenant's learned request size), or undefined. */
  split?(part: readonly LogEntry[]): LogEntry[][] | undefined;
  /** Waits before `part` goes (Loki: the tenant's pace). */
  pace?(part: readonly LogEntry[]): Promise<void>;
  /** Told of a part the receiver stored whole. */
  landed?(part: readonly LogEntry[]): void;
  /** True when `err` means: nothing stored, send the part again (Loki: its tenant's rate limit). */
  again?(err: unknown, part: readonly LogEntry[]): boolean;
  /** The low-cardinality drop reason of a refusal's status. */
  reason(refusal: R): string;
}

/**
 * Pushes `entries`. Only what a refusal leaves open is pushed again: as one request when the answer
 * settled some of it, split in halves when it settled nothing (an unreadable body, a 413). Those
 * extra requests come out of `ctx.budget`; once spent, the parts still open are dropped whole, saying
 * so. A retryable failure anywhere propagates at once: the pipeline retries the original batch.
 */
export async function deliverIsolating<R extends DataRefusal>(
  entries: readonly LogEntry[],
  ctx: IsolationContext,
  hooks: IsolationHooks<R>,
): Promise<void> {
  const queue: { part: readonly LogEntry[]; cause: R | undefined }[] = [{ part: entries, cause: undefined }];
  let budget = ctx.budget;
  while (queue.length > 0) {
    const { part, cause } = queue.shift()!;
    const chunks = hooks.split?.(part);
    if (chunks) {
      // Sent in order, in pieces, each still carrying the refusal it is being isolated for.
      queue.unshift(...chunks.map((chunk) => ({ part: chunk, cause })));
      if (cause) budget += chunks.length - 1;
      continue;
    }
    if (cause) {
      if (budget <= 0) {
        const reason = hooks.reason(cause);
        const detail =
          `${cause.detail} (not isolated: the ${ctx.budget} extra requests for isolating refused ` +
          `entries are spent)`;
        ctx.drops.add(part.map((entry) => ({ entry, reason, detail })));
        continue;
      }
      budget--;
    }
    await hooks.pace?.(part);
    try {
      await hooks.send(part);
      hooks.landed?.(part);
      if (part !== entries) ctx.onLanded?.(part);
      continue;
    } catch (err) {
      if (hooks.again?.(err, part)) {
        queue.unshift({ part, cause });
        if (cause) budget++;
        continue;
      }
      const refusal = hooks.refusal(err);
      if (!refusal) throw err;
      const open = hooks.settle(part, refusal);
      if (open.length === 0) continue;
      if (open.length === 1 && part.length === 1) {
        hooks.isolated(open[0]!, refusal);
        continue;
      }
      if (open.length < part.length) {
        queue.unshift({ part: open, cause: refusal });
        continue;
      }
      const mid = Math.floor(open.length / 2);
      queue.unshift({ part: open.slice(0, mid), cause: refusal }, { part: open.slice(mid), cause: refusal });
    }
  }
}

// The source seam. A source turns one Salesforce feed into an async stream of LogEntry; the pipeline
// pulls from it only when its lane has room, which is how backpressure reaches Salesforce.
import type { LogEntry } from "../model.ts";

/** What a source may read of the checkpoint document: its own keys, through the org view. */
export interface CheckpointReader {
  load(key: string): Promise<string | undefined>;
}

/**
 * What a source yields: one entry, or a run of entries in order. A run costs the pipeline one
 * promise instead of one per entry, so a source that receives entries in bulk (a CSV chunk, a fetch
 * response, a query page) yields them as the array it already holds. A run is held outside the lane
 * queue's bounds while it is admitted, so keep runs to what one network read brings.
 */
export type SourceItem = LogEntry | readonly LogEntry[];

export type SourceName = "pubsub" | "eventlog_objects" | "eventlogfile" | "apexlog";

export interface Source {
  /** Decides the lane: `pubsub` is streaming, every other source is bulk. */
  readonly name: SourceName;
  /**
   * Yields entries until the feed ends (a finite run) or `signal` aborts, when it must return
   * promptly. Tokens for one key are yielded in monotonic order.
   */
  events(state: CheckpointReader, signal: AbortSignal): AsyncIterable<SourceItem>;
}

/** True for a run of entries (`Array.isArray` alone does not narrow a readonly array). */
export function isRun(item: SourceItem): item is readonly LogEntry[] {
  return Array.isArray(item);
}

/** The entries of a source's items one by one, for readers that want entries, not runs. */
export async function* eachEntry(
  items: AsyncIterable<SourceItem>,
): AsyncGenerator<LogEntry, void, undefined> {
  for await (const item of items) {
    if (isRun(item)) yield* item;
    else yield item;
  }
}

export type LaneName = "streaming" | "bulk";

export function laneOf(source: Pick<Source, "name">): LaneName {
  return source.name === "pubsub" ? "streaming" : "bulk";
}

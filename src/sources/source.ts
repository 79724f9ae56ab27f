// The source seam. A source turns one Salesforce feed into an async stream of LogEntry; the pipeline
// pulls from it only when its lane has room, which is how backpressure reaches Salesforce.
import type { LogEntry } from "../model.ts";

/** What a source may read of the checkpoint document: its own keys, through the org view. */
export interface CheckpointReader {
  load(key: string): Promise<string | undefined>;
  /**
   * Tells `listener` each key (as this reader names it) and value the run committed, once the store
   * holds them: after the sink accepted every entry up to them, in order. A source that keeps a
   * position somewhere else too (a managed subscription's replay on Salesforce) moves it from here.
   * Returns the unsubscribe. Absent outside a pipeline run, which commits nothing.
   */
  watchCommits?(listener: CommitListener): () => void;
}

export type CommitListener = (key: string, value: string) => void;

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
  /**
   * Called once a run's drain committed everything it will (its last watchCommits call is behind
   * it): a source that mirrors commits elsewhere finishes them here, bounded by itself.
   */
  settled?(): Promise<void>;
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

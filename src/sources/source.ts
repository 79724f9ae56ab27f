// The source seam. A source turns one Salesforce feed into an async stream of LogEntry; the pipeline
// pulls from it only when its lane has room, which is how backpressure reaches Salesforce.
import type { LogEntry } from "../model.ts";

/** What a source may read of the checkpoint document: its own keys, through the org view. */
export interface CheckpointReader {
  load(key: string): Promise<string | undefined>;
}

export type SourceName = "pubsub" | "eventlog_objects" | "eventlogfile" | "apexlog";

export interface Source {
  /** Decides the lane: `pubsub` is streaming, every other source is bulk. */
  readonly name: SourceName;
  /**
   * Yields entries until the feed ends (a finite run) or `signal` aborts, when it must return
   * promptly. Tokens for one key are yielded in monotonic order.
   */
  events(state: CheckpointReader, signal: AbortSignal): AsyncIterable<LogEntry>;
}

export type LaneName = "streaming" | "bulk";

export function laneOf(source: Pick<Source, "name">): LaneName {
  return source.name === "pubsub" ? "streaming" : "bulk";
}

// The summary's numbers, measured where they happen: a decorator over the daemon's own sink that
// counts what Loki accepted and what it refused for good. It changes nothing about the push.
import {
  PermanentSinkError,
  type DropListener,
  type LandListener,
  type PushResult,
  type RequestSlots,
  type Sink,
} from "../sinks/sink.ts";
import type { Batch, LogEntry } from "../model.ts";

export class CountingSink implements Sink {
  readonly #inner: Sink;
  rowsPushed = 0;
  rowsDropped = 0;
  bytesPushed = 0;

  constructor(inner: Sink) {
    this.#inner = inner;
  }

  async push(
    batch: Batch,
    signal?: AbortSignal,
    onDropped?: DropListener,
    onLanded?: LandListener,
    slots?: RequestSlots,
  ): Promise<PushResult> {
    const real = batch.filter((e) => !e.checkpointOnly);
    // Parts told landed are counted when told (a retry will not carry them), and not again below.
    const told = new Set<LogEntry>();
    const landed = (entries: readonly LogEntry[]): void => {
      for (const e of entries) {
        if (told.has(e)) continue;
        told.add(e);
        this.#count(e);
      }
      onLanded?.(entries);
    };
    let result: PushResult;
    try {
      result = await this.#inner.push(batch, signal, onDropped, landed, slots);
    } catch (err) {
      if (err instanceof PermanentSinkError) this.rowsDropped += real.length - told.size;
      throw err;
    }
    const dropped = new Set(result.dropped.flatMap((d) => d.entries));
    for (const e of real) if (!dropped.has(e) && !told.has(e)) this.#count(e);
    this.rowsDropped += dropped.size;
    return result;
  }

  #count(entry: LogEntry): void {
    this.rowsPushed++;
    this.bytesPushed += entry.lineBytes;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

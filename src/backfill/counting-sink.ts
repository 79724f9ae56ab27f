// The summary's numbers, measured where they happen: a decorator over the daemon's own sink that
// counts what Loki accepted and what it refused for good. It changes nothing about the push.
import { PermanentSinkError, type DropListener, type PushResult, type Sink } from "../sinks/sink.ts";
import type { Batch } from "../model.ts";

export class CountingSink implements Sink {
  readonly #inner: Sink;
  rowsPushed = 0;
  rowsDropped = 0;
  bytesPushed = 0;

  constructor(inner: Sink) {
    this.#inner = inner;
  }

  async push(batch: Batch, signal?: AbortSignal, onDropped?: DropListener): Promise<PushResult> {
    const real = batch.filter((e) => !e.checkpointOnly);
    let result: PushResult;
    try {
      result = await this.#inner.push(batch, signal, onDropped);
    } catch (err) {
      if (err instanceof PermanentSinkError) this.rowsDropped += real.length;
      throw err;
    }
    const dropped = new Set(result.dropped.flatMap((d) => d.entries));
    for (const e of real) {
      if (dropped.has(e)) continue;
      this.rowsPushed++;
      this.bytesPushed += e.lineBytes;
    }
    this.rowsDropped += dropped.size;
    return result;
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

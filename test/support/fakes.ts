// In-memory stand-ins for the seams, for pipeline tests: a store that records every commitMany, a
// sink whose pushes the test completes (in any order) or scripts, and sources that replay a script
// or are fed by the test. No timers: tests drive time with ManualClock and turns with settle().
import { once } from "node:events";
import { setImmediate as turn } from "node:timers/promises";
import { LogEntry, type Batch, type Labels } from "../../src/model.ts";
import { PermanentSinkError, RetryableSinkError, type PushResult, type Sink } from "../../src/sinks/sink.ts";
import type { CheckpointReader, Source, SourceItem, SourceName } from "../../src/sources/source.ts";
import type { CheckpointStore, WriteFence } from "../../src/state/store.ts";

// ---------------------------------------------------------------- entries and event-loop turns

let nextTs = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z

/** A real entry on `key` (labels default to an eventlog_objects ApiEvent). */
export function entry(
  key: string,
  value: string,
  opts: { line?: string; labels?: Labels; metadata?: Labels; timestampNs?: bigint } = {},
): LogEntry {
  return new LogEntry({
    timestampNs: opts.timestampNs ?? nextTs++,
    labels: opts.labels ?? { source: "eventlog_objects", event_type: "ApiEvent" },
    line: opts.line ?? `{"v":"${value}"}`,
    structuredMetadata: opts.metadata ?? {},
    checkpoint: { key, value },
  });
}

/** A checkpoint-only token. */
export function token(key: string, value: string): LogEntry {
  return LogEntry.checkpointOnly({ key, value }, nextTs++);
}

/** Lets every pending microtask and immediate run, `turns` times over. */
export async function settle(turns = 10): Promise<void> {
  for (let i = 0; i < turns; i++) await turn();
}

/** Spins event-loop turns until `cond` holds; fails the test instead of hanging. */
export async function waitUntil(cond: () => boolean, what = "condition", maxTurns = 5000): Promise<void> {
  for (let i = 0; i < maxTurns; i++) {
    if (cond()) return;
    await turn();
  }
  throw new Error(`timed out waiting for ${what}`);
}

// ---------------------------------------------------------------- store

/** A write fence for store tests: `check` throws to refuse; `epoch` is read at each write. */
export function testFence(
  opts: { check?: () => void; epoch?: () => number | undefined; signal?: AbortSignal } = {},
): WriteFence {
  return {
    check: opts.check ?? (() => undefined),
    epoch: opts.epoch ?? (() => undefined),
    signal: () => opts.signal,
  };
}

export class MemoryStore implements CheckpointStore {
  readonly location = "memory://test";
  readonly doc = new Map<string, string>();
  /** Every commitMany argument, in call order. */
  readonly commits: Record<string, string>[] = [];
  resets = 0;
  #fence: WriteFence | undefined;
  #failNext: Error | undefined;
  #failTimes = 0;
  #held: Promise<undefined> | undefined;
  /** Every commitMany call, failed ones included. */
  commitAttempts = 0;

  constructor(initial: Record<string, string> = {}) {
    for (const [k, v] of Object.entries(initial)) this.doc.set(k, v);
  }

  /** The next `times` commitMany calls throw `err`. */
  failNextCommit(err: Error, times = 1): void {
    this.#failNext = err;
    this.#failTimes = times;
  }

  /** Commits wait (a slow or unreachable store) until the returned function is called. */
  holdCommits(): () => void {
    const { promise, resolve } = Promise.withResolvers<undefined>();
    this.#held = promise;
    return () => {
      this.#held = undefined;
      resolve(undefined);
    };
  }

  /** Values one key took, commit by commit. */
  history(key: string): string[] {
    return this.commits.flatMap((c) => (key in c ? [c[key]!] : []));
  }

  load(key: string): Promise<string | undefined> {
    return Promise.resolve(this.doc.get(key));
  }

  commit(key: string, value: string): Promise<void> {
    return this.commitMany({ [key]: value });
  }

  async replace(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#fence?.check();
    this.doc.clear();
    await this.commitMany(items);
  }

  async commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#fence?.check();
    this.commitAttempts++;
    if (this.#held) await this.#held;
    if (this.#failNext !== undefined) {
      const err = this.#failNext;
      if (--this.#failTimes <= 0) this.#failNext = undefined;
      throw err;
    }
    this.commits.push({ ...items });
    for (const [k, v] of Object.entries(items)) this.doc.set(k, v);
  }

  delete(key: string): Promise<void> {
    this.doc.delete(key);
    return Promise.resolve();
  }

  snapshot(): Promise<Record<string, string>> {
    return Promise.resolve(Object.fromEntries(this.doc));
  }

  reset(): void {
    this.resets++;
  }

  setFence(fence: WriteFence | undefined): void {
    this.#fence = fence;
  }

  /** Term claims, in call order (the epoch each one stamped). */
  readonly claims: (number | undefined)[] = [];

  async claimTerm(): Promise<void> {
    await this.#fence?.check();
    this.claims.push(this.#fence?.epoch());
  }

  readFenceEpoch(): Promise<number | undefined> {
    return Promise.resolve(undefined);
  }

  close(): Promise<void> {
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------- sink

export type PushOutcome =
  | { ok: PushResult }
  | { retryable: number | undefined }
  | { permanent: string }
  | { error: unknown }
  | "stall";

export class PushCall {
  readonly entries: LogEntry[];
  readonly signal: AbortSignal | undefined;
  settled = false;
  readonly #resolve: (r: PushResult) => void;
  readonly #reject: (err: unknown) => void;
  readonly promise: Promise<PushResult>;

  constructor(entries: LogEntry[], signal: AbortSignal | undefined) {
    this.entries = entries;
    this.signal = signal;
    const { promise, resolve, reject } = Promise.withResolvers<PushResult>();
    this.promise = promise;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  /** Checkpoint values carried by this push, in order. */
  get values(): string[] {
    return this.entries.map((e) => e.checkpoint.value);
  }

  succeed(result: PushResult = { dropped: [] }): void {
    this.#settle(() => {
      this.#resolve(result);
    });
  }

  failRetryable(retryAfterMs?: number): void {
    this.fail(
      new RetryableSinkError("loki answered 503", retryAfterMs === undefined ? {} : { retryAfterMs }),
    );
  }

  failPermanent(reason = "bad_request"): void {
    this.fail(new PermanentSinkError("loki answered 400", reason));
  }

  fail(err: unknown): void {
    this.#settle(() => {
      this.#reject(err);
    });
  }

  apply(outcome: Exclude<PushOutcome, "stall">): void {
    if ("ok" in outcome) this.succeed(outcome.ok);
    else if ("retryable" in outcome) this.failRetryable(outcome.retryable);
    else if ("permanent" in outcome) this.failPermanent(outcome.permanent);
    else this.fail(outcome.error);
  }

  #settle(fn: () => void): void {
    if (this.settled) throw new Error("push already settled");
    this.settled = true;
    fn();
  }
}

/**
 * A sink the test steers. In auto mode every push succeeds at once unless an outcome was scripted;
 * stall() leaves pushes pending until the test settles them (any order) or release()s them.
 */
export class FakeSink implements Sink {
  readonly calls: PushCall[] = [];
  /** When false the sink ignores the abort signal (a badly behaved sink). */
  honourAbort = true;
  /** Pushes this matches stay pending even in auto mode (e.g. stall one lane only). */
  holdIf: ((entries: readonly LogEntry[]) => boolean) | undefined;
  closed = false;
  #auto = true;
  readonly #script: PushOutcome[] = [];

  /** Outcomes for the next pushes, in order; after them the mode (auto/stalled) applies again. */
  script(...outcomes: PushOutcome[]): void {
    this.#script.push(...outcomes);
  }

  stall(): void {
    this.#auto = false;
  }

  /** Back to auto mode; every pending push succeeds. */
  release(): void {
    this.#auto = true;
    for (const call of this.pending()) call.succeed();
  }

  pending(): PushCall[] {
    return this.calls.filter((c) => !c.settled);
  }

  /** Checkpoint values of every push that succeeded, in completion-independent call order. */
  get deliveredValues(): string[] {
    return this.calls.flatMap((c) => c.values);
  }

  push(batch: Batch, signal?: AbortSignal): Promise<PushResult> {
    const call = new PushCall([...batch], signal);
    this.calls.push(call);
    if (signal && this.honourAbort) {
      signal.addEventListener(
        "abort",
        () => {
          if (!call.settled) call.fail(signal.reason);
        },
        { once: true },
      );
    }
    const outcome = this.#script.shift();
    if (outcome !== undefined) {
      if (outcome !== "stall") call.apply(outcome);
    } else if (this.#auto && !(this.holdIf?.(call.entries) ?? false)) {
      call.succeed();
    }
    return call.promise;
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }
}

// ---------------------------------------------------------------- sources

export interface ScriptedSourceOptions {
  /** What happens after the last item: end the stream, wait for the stop signal, or throw. */
  after?: "end" | "wait-stop" | Error;
  /** Yield runs of up to this many entries (as a bulk source does) instead of one entry at a time. */
  runSize?: number;
}

/** Replays `items` (a fresh iterable per run when given a factory); counts what was pulled. */
export class ScriptedSource implements Source {
  readonly name: SourceName;
  pulled = 0;
  runs = 0;
  readonly #items: () => Iterable<LogEntry>;
  readonly #after: NonNullable<ScriptedSourceOptions["after"]>;
  readonly #runSize: number;

  constructor(
    name: SourceName,
    items: Iterable<LogEntry> | (() => Iterable<LogEntry>),
    opts: ScriptedSourceOptions = {},
  ) {
    this.name = name;
    this.#items = typeof items === "function" ? items : () => items;
    this.#after = opts.after ?? "end";
    this.#runSize = opts.runSize ?? 1;
  }

  async *events(_state: CheckpointReader, signal: AbortSignal): AsyncGenerator<SourceItem> {
    this.runs++;
    const items = this.#items();
    if (this.#runSize > 1 && Array.isArray(items)) {
      // A bulk source hands over the array it already holds: no per-entry iteration.
      const all = items as readonly LogEntry[];
      for (let i = 0; i < all.length && !signal.aborted; i += this.#runSize) {
        const run = all.slice(i, i + this.#runSize);
        this.pulled += run.length;
        yield run;
      }
    } else yield* this.#oneByOne(items, signal);
    if (signal.aborted) return;
    if (this.#after === "wait-stop") await once(signal, "abort");
    else if (this.#after instanceof Error) throw this.#after;
  }

  *#oneByOne(items: Iterable<LogEntry>, signal: AbortSignal): Generator<SourceItem> {
    let run: LogEntry[] = [];
    for (const item of items) {
      if (signal.aborted) return;
      this.pulled++;
      if (this.#runSize === 1) yield item;
      else if (run.push(item) === this.#runSize) {
        yield run;
        run = [];
      }
    }
    if (run.length > 0 && !signal.aborted) yield run;
  }
}

/** A source the test feeds by hand: emit(), end(), fail(). Ends by itself when the run stops. */
export class ChannelSource implements Source {
  readonly name: SourceName;
  pulled = 0;
  readonly #buffer: (LogEntry | { end: true } | { error: unknown })[] = [];
  #wake: (() => void) | undefined;

  constructor(name: SourceName) {
    this.name = name;
  }

  emit(...entries: LogEntry[]): void {
    this.#buffer.push(...entries);
    this.#notify();
  }

  end(): void {
    this.#buffer.push({ end: true });
    this.#notify();
  }

  fail(error: unknown): void {
    this.#buffer.push({ error });
    this.#notify();
  }

  async *events(_state: CheckpointReader, signal: AbortSignal): AsyncGenerator<LogEntry> {
    const onAbort = (): void => {
      this.#notify();
    };
    signal.addEventListener("abort", onAbort);
    try {
      for (;;) {
        const next = this.#buffer.shift();
        if (next === undefined) {
          if (signal.aborted) return;
          await new Promise<void>((resolve) => (this.#wake = resolve));
          continue;
        }
        if (next instanceof LogEntry) {
          this.pulled++;
          yield next;
        } else if ("end" in next) {
          return;
        } else {
          throw next.error;
        }
      }
    } finally {
      signal.removeEventListener("abort", onAbort);
    }
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }
}

// Which streams may share a request (#37). Loki 3.4.6's ingester answers a push with the result of the
// stream it appended last, so a stream it refuses before another it stores is lost unseen. It refuses a
// stream's entries for three reasons only: the stream cannot be created (the tenant's stream limit), an
// entry is too far behind the stream's newest, or the stream is over its per-stream rate. None of them
// can hit a stream this process saw Loki accept moments ago (it exists), whose entries are all at or
// after the newest Loki accepted of it (none is behind), and whose bytes stay well inside Loki's
// per-stream bucket as mirrored here. Such streams go together, in one request; every other stream
// goes alone, so its answer is its own: the first push of each stream after a start or a resume, a
// backfill older than what went before, a stream Loki just refused or failed, a stream near its rate.
import type { LogEntry } from "../../model.ts";
import type { Clock } from "../../util/clock.ts";

/**
 * A stream accepted longer ago than this is treated as unknown: Loki may have flushed and dropped it
 * from its ingester's memory (chunk_idle_period is 30 m by default), and a new stream can be refused.
 */
export const ACCEPTED_FRESH_MS = 5 * 60_000;

/** The share of Loki's per-stream rate and burst a stream may use and still share a request. */
const RATE_MARGIN = 0.5;

/** Loki's per-stream bucket, as `sink.loki.limits` states it. */
export interface StreamRate {
  /** Bytes a second (per_stream_rate_limit); 0: no stream shares a request. */
  readonly per_stream_rate_limit: number;
  readonly per_stream_rate_limit_burst: number;
}

interface Seen {
  /** The newest timestamp Loki accepted of the stream from this process. */
  newestNs: bigint;
  acceptedAtMs: number;
  /** The mirrored per-stream bucket, at RATE_MARGIN of Loki's. */
  tokens: number;
  tokensAtMs: number;
}

/** One stream of a push: its label key and entries (sinks/receiving-loki/streams.ts groups them). */
export interface PushStream {
  readonly labels: string;
  readonly entries: readonly LogEntry[];
}

/** What Loki accepted of each stream lately, per destination (one per sink). */
export class AcceptedStreams {
  readonly #clock: Clock;
  readonly #rate: number;
  readonly #burst: number;
  readonly #seen = new Map<string, Seen>();

  constructor(clock: Clock, rate: StreamRate) {
    this.#clock = clock;
    this.#rate = rate.per_stream_rate_limit * RATE_MARGIN;
    this.#burst = rate.per_stream_rate_limit_burst * RATE_MARGIN;
  }

  /**
   * The requests for `streams`: every stream that cannot be refused at the ingester in one request (in
   * the order they came), each other stream in one of its own. Charges each stream's bytes to its
   * mirrored bucket, shared or not: Loki charges them either way.
   */
  plan(streams: readonly PushStream[]): PushStream[][] {
    // A batch of one stream is planned too: its bytes go to the mirrored bucket like any other's.
    if (this.#rate <= 0) return streams.map((s) => [s]);
    const now = this.#clock.monotonic();
    const shared: PushStream[] = [];
    const alone: PushStream[][] = [];
    for (const stream of streams) {
      if (this.#canShare(stream, now)) shared.push(stream);
      else alone.push([stream]);
    }
    // One shareable stream is a request of its own anyway.
    return shared.length === 0 ? alone : [shared, ...alone];
  }

  /** Loki stored `stream` whole: it exists, and nothing older than its newest may follow shared. */
  accepted(stream: PushStream): void {
    let newest: bigint | undefined;
    for (const e of stream.entries)
      if (newest === undefined || e.timestampNs > newest) newest = e.timestampNs;
    if (newest === undefined) return;
    const now = this.#clock.monotonic();
    const seen = this.#seen.get(stream.labels);
    if (seen === undefined) {
      this.#seen.set(stream.labels, {
        newestNs: newest,
        acceptedAtMs: now,
        tokens: this.#burst,
        tokensAtMs: now,
      });
      this.#charge(this.#seen.get(stream.labels)!, bytesOf(stream), now);
      return;
    }
    if (newest > seen.newestNs) seen.newestNs = newest;
    seen.acceptedAtMs = now;
  }

  /** Loki refused or failed part of `stream`, or its answer is unknown: it goes alone until accepted again. */
  forget(stream: PushStream): void {
    this.#seen.delete(stream.labels);
  }

  /** Streams remembered (for tests and /statusz). */
  get size(): number {
    return this.#seen.size;
  }

  #canShare(stream: PushStream, now: number): boolean {
    const seen = this.#seen.get(stream.labels);
    if (seen === undefined) return false;
    if (now - seen.acceptedAtMs > ACCEPTED_FRESH_MS) {
      this.#seen.delete(stream.labels);
      return false;
    }
    let behind = false;
    for (const e of stream.entries) if (e.timestampNs < seen.newestNs) behind = true;
    // Charged shared or not: Loki charges the stream's bytes either way.
    const fits = this.#charge(seen, bytesOf(stream), now);
    return fits && !behind;
  }

  /** Takes `bytes` from the mirrored bucket; false when it did not hold them (the stream goes alone). */
  #charge(seen: Seen, bytes: number, now: number): boolean {
    seen.tokens = Math.min(this.#burst, seen.tokens + ((now - seen.tokensAtMs) / 1000) * this.#rate);
    seen.tokensAtMs = now;
    const fits = bytes <= seen.tokens;
    seen.tokens = Math.max(-this.#burst, seen.tokens - bytes);
    return fits;
  }
}

/** What Loki charges a stream's rate with: line and structured-metadata bytes. */
function bytesOf(stream: PushStream): number {
  let n = 0;
  for (const e of stream.entries) n += e.lineBytes + e.metadataChars;
  return n;
}

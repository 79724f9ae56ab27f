// One simulated event bus channel: a growing log of encoded events with sequence-number replay ids
// and a retention window, plus the subscribers to wake when it grows.
import { backlogEventMs, buildTopicSchema, generateEvent, type SimTopicSchema } from "./events.ts";

/** A string length far past the end of the buffer: every decoder fails on it. */
const POISON = Buffer.from([0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f]);

export class TopicLog {
  readonly schema: SimTopicSchema;
  readonly #seed: number;
  /** Starts every EventIdentifier: `sim`, or an org's own so several orgs never share an id. */
  readonly #idPrefix: string;
  readonly #retention: number;
  readonly #encoded: Buffer[] = [];
  readonly #listeners = new Set<() => void>();
  /** Sequence numbers whose payload is replaced by bytes no Avro reader accepts. */
  readonly poisoned = new Set<number>();
  /** Highest published sequence number (0 = empty). */
  max: number;
  /** Events handed to subscribers, all streams together. */
  emitted = 0;
  readonly #now: () => number;
  /** The topic's creation instant: its backlog is dated backwards from here (newest = this). */
  readonly #startMs: number;
  readonly #backlog: number;
  /** Creation times of published (live) events, in order: seq `backlog + 1 + i` at index i. */
  readonly #publishedAt: number[] = [];

  constructor(
    topic: string,
    seed: number,
    initialEvents: number,
    retentionEvents: number,
    now: () => number = Date.now,
    idPrefix = "sim",
  ) {
    this.schema = buildTopicSchema(topic);
    this.#seed = seed;
    this.#idPrefix = idPrefix;
    this.#retention = retentionEvents;
    this.max = initialEvents;
    this.#now = now;
    this.#startMs = now();
    this.#backlog = initialEvents;
  }

  /** When event `seq` was created: backlog backwards from the start, live events as published. */
  createdMs(seq: number): number {
    if (seq <= this.#backlog) return backlogEventMs(this.#startMs, this.#backlog, seq);
    return this.#publishedAt[seq - this.#backlog - 1] ?? this.#startMs;
  }

  /** Oldest sequence number still replayable. */
  get firstRetained(): number {
    return Math.max(1, this.max - this.#retention + 1);
  }

  /** The Avro payload of event `seq`, generated once and cached (so both bench clients pay nothing). */
  payload(seq: number): Buffer {
    if (this.poisoned.has(seq)) return POISON;
    let buf = this.#encoded[seq];
    if (!buf) {
      buf = this.schema.type.toBuffer(
        generateEvent(this.#seed, this.schema, seq, this.createdMs(seq), this.#idPrefix),
      );
      this.#encoded[seq] = buf;
    }
    return buf;
  }

  publish(count: number): void {
    // Never before an earlier event: a clock stepping back must not reorder the topic.
    const at = Math.max(this.#now(), this.#publishedAt.at(-1) ?? this.#startMs);
    for (let i = 0; i < count; i++) this.#publishedAt.push(at);
    this.max += count;
    for (const wake of this.#listeners) wake();
  }

  onPublish(wake: () => void): () => void {
    this.#listeners.add(wake);
    return () => this.#listeners.delete(wake);
  }
}

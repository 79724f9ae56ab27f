// One simulated event bus channel: a growing log of encoded events with sequence-number replay ids
// and a retention window, plus the subscribers to wake when it grows.
import { buildTopicSchema, generateEvent, type SimTopicSchema } from "./events.ts";

/** A string length far past the end of the buffer: every decoder fails on it. */
const POISON = Buffer.from([0x02, 0xfe, 0xff, 0xff, 0xff, 0x0f]);

export class TopicLog {
  readonly schema: SimTopicSchema;
  readonly #seed: number;
  readonly #retention: number;
  readonly #encoded: Buffer[] = [];
  readonly #listeners = new Set<() => void>();
  /** Sequence numbers whose payload is replaced by bytes no Avro reader accepts. */
  readonly poisoned = new Set<number>();
  /** Highest published sequence number (0 = empty). */
  max: number;
  /** Events handed to subscribers, all streams together. */
  emitted = 0;

  constructor(topic: string, seed: number, initialEvents: number, retentionEvents: number) {
    this.schema = buildTopicSchema(topic);
    this.#seed = seed;
    this.#retention = retentionEvents;
    this.max = initialEvents;
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
      buf = this.schema.type.toBuffer(generateEvent(this.#seed, this.schema, seq));
      this.#encoded[seq] = buf;
    }
    return buf;
  }

  publish(count: number): void {
    this.max += count;
    for (const wake of this.#listeners) wake();
  }

  onPublish(wake: () => void): () => void {
    this.#listeners.add(wake);
    return () => this.#listeners.delete(wake);
  }
}

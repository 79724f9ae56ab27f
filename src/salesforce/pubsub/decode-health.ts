// Per-topic decode bookkeeping that outlives reconnects (§3.6): poison events are counted, and a
// topic where every event keeps failing, or whose schema cannot be fetched, is surfaced once.
import type { Counter } from "@opentelemetry/api";
import type { Logger } from "../../obs/logger.ts";

export const DECODE_STALL_THRESHOLD = 3;

interface TopicHealth {
  allFailedBatches: number;
  schemaFailures: number;
  flagged: boolean;
}

export class DecodeHealth {
  readonly #topics = new Map<string, TopicHealth>();
  readonly #errors: Counter;
  readonly #stalls: Counter;
  readonly #log: Logger;

  constructor(errors: Counter, stalls: Counter, log: Logger) {
    this.#errors = errors;
    this.#stalls = stalls;
    this.#log = log;
  }

  #of(topic: string): TopicHealth {
    let h = this.#topics.get(topic);
    if (!h) {
      h = { allFailedBatches: 0, schemaFailures: 0, flagged: false };
      this.#topics.set(topic, h);
    }
    return h;
  }

  poison(topic: string, err: unknown): void {
    const reason = err instanceof Error ? err.constructor.name : typeof err;
    this.#errors.add(1, { reason, topic });
  }

  /** After each non-empty batch: successes reset, an all-failed batch counts toward a stall. */
  batch(topic: string, ok: number, failed: number): void {
    const h = this.#of(topic);
    if (ok > 0) {
      h.allFailedBatches = 0;
      h.schemaFailures = 0;
      h.flagged = false;
      return;
    }
    if (failed === 0) return;
    h.allFailedBatches++;
    if (h.allFailedBatches >= DECODE_STALL_THRESHOLD) {
      this.#flag(topic, h, `every event of the last ${h.allFailedBatches} batches failed to decode`);
    }
  }

  schemaFailure(topic: string, err: unknown): void {
    const h = this.#of(topic);
    h.schemaFailures++;
    if (h.schemaFailures >= DECODE_STALL_THRESHOLD) {
      this.#flag(topic, h, `schema fetch failed ${h.schemaFailures} times in a row (${String(err)})`);
    }
  }

  #flag(topic: string, h: TopicHealth, why: string): void {
    if (h.flagged) return;
    h.flagged = true;
    this.#stalls.add(1, { topic });
    this.#log.error(
      { topic },
      `Pub/Sub topic stuck: ${why}; check the topic's schema and sf2loki_decode_errors`,
    );
  }
}

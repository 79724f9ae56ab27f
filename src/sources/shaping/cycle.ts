// The poll-cycle machinery the three polling sources share (spec A §5): jittered sleeps that end on
// abort, a checkpoint load that backs off instead of crashing, failure escalation and stall
// bookkeeping with their counters, and a lazily serialised checkpoint token.
import { metrics, type Counter, type Meter } from "@opentelemetry/api";
import type { Logger } from "../../obs/logger.ts";
import type { CheckpointToken } from "../../model.ts";
import { isThrottled } from "../../salesforce/rest-errors.ts";
import type { Clock } from "../../util/clock.ts";
import { fullJitter, retry } from "../../util/retry.ts";
import type { CheckpointReader, SourceName } from "../source.ts";

/** `interval x U(0.9, 1.1)`. */
export function jittered(clock: Clock, intervalMs: number): number {
  return intervalMs * (0.9 + 0.2 * clock.random());
}

/** Whether `signal` has aborted by now: a call, so it is re-read after every await. */
export function aborted(signal: AbortSignal): boolean {
  return signal.aborted;
}

/** Sleeps; false when `signal` aborted (the caller returns), never throws. */
export async function pause(clock: Clock, ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return false;
  try {
    await clock.sleep(ms, signal);
    return !signal.aborted;
  } catch {
    return false;
  }
}

/**
 * Reads a checkpoint; a failing store is logged and retried with backoff (1 s doubling to 30 s)
 * until it answers or `signal` aborts (then undefined is never returned: the abort reason is thrown).
 */
export async function loadCheckpoint(
  state: CheckpointReader,
  key: string,
  deps: { clock: Clock; log: Logger; signal: AbortSignal },
): Promise<string | undefined> {
  return retry(() => state.load(key), {
    policy: { maxAttempts: Number.MAX_SAFE_INTEGER, backoffMs: fullJitter(1_000, 30_000) },
    clock: deps.clock,
    isTransient: () => true,
    signal: deps.signal,
    onRetry: (err, attempt, delayMs) => {
      deps.log.warn(
        { key, attempt, retryInMs: Math.round(delayMs), err: String(err) },
        "could not read the checkpoint; retrying",
      );
    },
  });
}

/** A checkpoint whose value is serialised only when read: usually once per pushed batch, not per row. */
export class LazyToken implements CheckpointToken {
  readonly key: string;
  #render: (() => string) | undefined;
  #value: string | undefined;

  constructor(key: string, render: () => string) {
    this.key = key;
    this.#render = render;
  }

  get value(): string {
    if (this.#value === undefined) {
      this.#value = this.#render!();
      this.#render = undefined;
    }
    return this.#value;
  }
}

/**
 * Per-object failure and stall accounting: a WARNING per failure, ERROR from the third in a row;
 * a stall at the same boundary on the next stalling cycle is an ERROR and counts `watermark_stalls`.
 */
export class CycleHealth {
  readonly #source: SourceName;
  readonly #log: Logger;
  readonly #errors: Counter;
  readonly #stalls: Counter;
  readonly #failures = new Map<string, number>();
  readonly #seen = new Set<string>();
  readonly #stallAt = new Map<string, string>();

  constructor(source: SourceName, log: Logger, meter: Meter = metrics.getMeter("sf2loki")) {
    this.#source = source;
    this.#log = log;
    this.#errors = meter.createCounter("sf2loki_soql_poll_errors", { description: "Failed poll cycles" });
    this.#stalls = meter.createCounter("sf2loki_watermark_stalls", {
      description: "Poll cycles stuck on a timestamp tie",
    });
  }

  failed(object: string, err: unknown, what: string): void {
    const n = (this.#failures.get(object) ?? 0) + 1;
    this.#failures.set(object, n);
    this.#errors.add(1, { source: this.#source, object });
    const fields = { object, consecutiveFailures: n, err: err instanceof Error ? err.message : String(err) };
    const msg = `${what} failed; retrying next cycle`;
    // A spent API budget is an ERROR at once: nothing else will poll until the next cycle.
    if (n >= 3 || isThrottled(err)) this.#log.error(fields, msg);
    else this.#log.warn(fields, msg);
  }

  succeeded(object: string): void {
    // The object's error series at 0 from its first good cycle: a panel then reads 0, not "No data".
    if (!this.#seen.has(object)) {
      this.#seen.add(object);
      this.#errors.add(0, { source: this.#source, object });
    }
    this.#failures.delete(object);
  }

  stalled(object: string, boundary: string, detail: string): void {
    const again = this.#stallAt.get(object) === boundary;
    this.#stallAt.set(object, boundary);
    const fields = { object, boundary };
    if (again) {
      this.#stalls.add(1, { source: this.#source, object });
      this.#log.error(fields, `watermark stalled again at the same boundary: ${detail}`);
    } else {
      this.#log.warn(fields, `watermark stalled: ${detail}`);
    }
  }

  progressed(object: string): void {
    this.#stallAt.delete(object);
  }
}

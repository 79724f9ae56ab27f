// What Loki refused for good, told to the operator in few lines (#29 item 6). Loki's 400 names each
// refused entry with its own words (its timestamp in them), so logging per group of equal words wrote
// one ERROR line per entry: 660 lines in 3 s for one re-sent batch. Here: one line per batch and reason
// with the count and one example, and at most one line per reason a minute; the lines held back are
// counted into the next one, so a bad minute cannot flood the pipeline that carries our own logs.
import type { Logger } from "../obs/logger.ts";
import type { Clock } from "../util/clock.ts";

const EVERY_MS = 60_000;

interface Held {
  lastMs: number;
  batches: number;
  entries: number;
}

export class RefusalLog {
  readonly #logger: Logger;
  readonly #clock: Clock;
  readonly #held = new Map<string, Held>();

  constructor(logger: Logger, clock: Clock) {
    this.#logger = logger;
    this.#clock = clock;
  }

  /** One batch's entries refused for `reason`; `example` is Loki's (or the local check's) words for one. */
  refused(reason: string, entries: number, example: string | undefined, kept: boolean): void {
    const now = this.#clock.monotonic();
    const held = this.#held.get(reason);
    if (held !== undefined && now - held.lastMs < EVERY_MS) {
      held.batches++;
      held.entries += entries;
      return;
    }
    this.#held.set(reason, { lastMs: now, batches: 0, entries: 0 });
    this.#logger.error(
      {
        reason,
        entries,
        example,
        ...(held !== undefined && held.batches > 0
          ? { since_last_line: { batches: held.batches, entries: held.entries } }
          : {}),
      },
      `Loki refuses ${entries} entries of a batch for good (${reason}); they are ` +
        `${kept ? "dead-lettered" : "dropped"} and the rest is delivered: see the example, and match ` +
        `sink.loki.limits to the Loki's limits_config (repeats for this reason are logged once a minute)`,
    );
  }
}

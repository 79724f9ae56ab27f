// The daily byte budget's counter (spec B §5.7): line bytes pushed this UTC day, persisted under the
// checkpoint key `egress:budget` in the Python version's exact format, so a swapped daemon, a restart
// or a new leader continues the day's count. The day rolls over at 00:00 UTC on the injected clock.
import type { Logger } from "../obs/logger.ts";
import type { Clock } from "../util/clock.ts";

export const BUDGET_KEY = "egress:budget";
const DAY_MS = 86_400_000;
const WARN_AT = 0.8;

/** `YYYY-MM-DD` of a wall-clock instant, in UTC. */
export function utcDate(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

/** Python's `json.dumps({"date": d, "bytes": n})`: its default separators, byte for byte. */
export function formatBudget(date: string, bytes: number): string {
  return `{"date": ${JSON.stringify(date)}, "bytes": ${String(bytes)}}`;
}

/** Bytes counted for `today` in a stored value; anything malformed, or another day's, counts 0. */
export function parseBudget(raw: string | undefined, today: string): number {
  if (raw === undefined) return 0;
  try {
    const v = JSON.parse(raw) as { date?: unknown; bytes?: unknown };
    if (v.date !== today) return 0;
    return typeof v.bytes === "number" && Number.isSafeInteger(v.bytes) && v.bytes >= 0 ? v.bytes : 0;
  } catch {
    return 0;
  }
}

export class DailyBudget {
  readonly limit: number;
  readonly #clock: Clock;
  readonly #logger: Logger;
  #date: string;
  /** [start, end) of `#date` in wall-clock ms: the hot path compares numbers, not date strings. */
  #dayStartMs: number;
  #dayEndMs: number;
  #used = 0;
  /** Bytes of pushes admitted and not yet settled: counted against the budget while in flight. */
  #reserved = 0;
  #warned = false;

  constructor(limit: number, clock: Clock, logger: Logger) {
    this.limit = limit;
    this.#clock = clock;
    this.#logger = logger;
    const now = clock.now();
    this.#date = utcDate(now);
    this.#dayStartMs = now - (now % DAY_MS);
    this.#dayEndMs = this.#dayStartMs + DAY_MS;
  }

  get date(): string {
    this.#roll();
    return this.#date;
  }

  get used(): number {
    this.#roll();
    return this.#used;
  }

  /** Continues the count a previous process or leader stored (a term's first act). */
  load(raw: string | undefined): void {
    this.#roll();
    this.#used = parseBudget(raw, this.#date);
    this.#warned = this.#used >= this.limit * WARN_AT;
  }

  /**
   * Whether `bytes` more would go over today's budget, pushes in flight included (the lanes push
   * concurrently: without them each lane could overshoot by a batch, QUIRK §5.7). A day with nothing
   * counted or in flight admits any one batch, so one larger than the budget does not wait forever.
   */
  wouldExceed(bytes: number): boolean {
    this.#roll();
    const committed = this.#used + this.#reserved;
    return committed > 0 && committed + bytes > this.limit;
  }

  /** Holds `bytes` against the budget while their push is in flight; settle() releases them. */
  reserve(bytes: number): void {
    this.#reserved += bytes;
  }

  /**
   * The push of `reserved` bytes ended; `accepted` of them reached Loki and count (0 when it failed).
   * WARNs once per day at 80 %. A push that straddles midnight counts on the new day.
   */
  settle(reserved: number, accepted: number): void {
    this.#reserved = Math.max(0, this.#reserved - reserved);
    this.record(accepted);
  }

  /** Counts bytes Loki accepted. */
  record(bytes: number): void {
    this.#roll();
    if (bytes <= 0) return;
    this.#used += bytes;
    if (!this.#warned && this.#used >= this.limit * WARN_AT) {
      this.#warned = true;
      this.#logger.warn(
        { used_bytes: this.#used, daily_byte_budget: this.limit, date: this.#date },
        "80% of sink.loki.egress.daily_byte_budget is spent for today (UTC); at 100% budget_action applies",
      );
    }
  }

  /** The stored form of today's count. */
  serialize(): string {
    this.#roll();
    return formatBudget(this.#date, this.#used);
  }

  /** Milliseconds until the next 00:00 UTC. */
  msToMidnight(): number {
    const now = this.#clock.now();
    return DAY_MS - (now % DAY_MS);
  }

  #roll(): void {
    const now = this.#clock.now();
    if (now >= this.#dayStartMs && now < this.#dayEndMs) return;
    this.#date = utcDate(now);
    this.#dayStartMs = now - (now % DAY_MS);
    this.#dayEndMs = this.#dayStartMs + DAY_MS;
    this.#used = 0;
    this.#warned = false;
  }
}

// The per-run set of checkpoint keys left uncommitted by a shutdown drain (spec B §2.9, OPEN #86).
// Once a key is in here, no later commit of the same run may write it: doing so would advance the
// cursor past entries that were never delivered.
import type { Logger } from "../obs/logger.ts";
import type { PipelineMetrics } from "./metrics.ts";

const SHUTDOWN = { reason: "shutdown" } as const;

export class AbandonedKeys {
  readonly #keys = new Set<string>();
  readonly #metrics: PipelineMetrics;
  readonly #logger: Logger;

  constructor(metrics: PipelineMetrics, logger: Logger) {
    this.#metrics = metrics;
    this.#logger = logger;
    // At 0 from the run's start: the checkpoint panel reads 0 on a healthy daemon, not "No data".
    metrics.abandoned.add(0, SHUTDOWN);
  }

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  get keys(): readonly string[] {
    return [...this.#keys];
  }

  /** Records an abandonment of `entries` real entries carrying `keys`; warns once per call. */
  add(keys: Iterable<string>, entries: number, why: string): void {
    const list = [...keys];
    for (const key of list) this.#keys.add(key);
    if (entries > 0) this.#metrics.abandoned.add(entries, SHUTDOWN);
    this.#logger.warn(
      { keys: list, entries },
      `${why}: ${entries} entries left uncommitted on ${list.length} checkpoint key(s); they will be ` +
        "read again on the next run, and later commits of these keys are withheld for this run",
    );
  }
}

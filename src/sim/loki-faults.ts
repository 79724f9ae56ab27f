// Faults the simulated Loki injects on demand: forced statuses, poison lines, latency, stalls.

export interface ForcedFailure {
  readonly status: number;
  /** Sent verbatim as `Retry-After` (delta-seconds or an HTTP date). */
  readonly retryAfter?: string;
  readonly body?: string;
}

export interface PoisonRule {
  readonly marker: string;
  readonly status: number;
}

export class LokiFaults {
  #forced: ForcedFailure[] = [];
  #poison: PoisonRule | undefined;
  #latencyMs = 0;
  #stall: { promise: Promise<void>; release: () => void } | undefined;
  #held = 0;
  #queryFailure: number | undefined;

  /** The next `n` push requests get `status` (after their body was read), whatever they carry. */
  failNext(n: number, status: number, opts: { retryAfter?: string; body?: string } = {}): void {
    for (let i = 0; i < n; i++) this.#forced.push({ status, ...opts });
  }

  /** Entries whose line contains `marker` are refused with `status` (400 or 413); null turns it off. */
  rejectLinesContaining(marker: string | null, status = 400): void {
    this.#poison = marker === null ? undefined : { marker, status };
  }

  /** Every response, /ready included, is delayed by `ms` (0 turns it off). */
  setLatency(ms: number): void {
    this.#latencyMs = Math.max(0, ms);
  }

  /** Push requests are held, unanswered, until `release()`. */
  stall(): void {
    if (this.#stall) return;
    let release!: () => void;
    const promise = new Promise<void>((resolve) => {
      release = resolve;
    });
    this.#stall = { promise, release };
  }

  release(): void {
    this.#stall?.release();
    this.#stall = undefined;
  }

  /** Every log query is answered with `status` (Loki's read path down); undefined heals it. */
  failQueries(status: number | undefined): void {
    this.#queryFailure = status;
  }

  takeQueryFailure(): number | undefined {
    return this.#queryFailure;
  }

  /** Removes every fault and releases held requests. */
  clear(): void {
    this.#queryFailure = undefined;
    this.#forced = [];
    this.#poison = undefined;
    this.#latencyMs = 0;
    this.release();
  }

  get latencyMs(): number {
    return this.#latencyMs;
  }

  get poison(): PoisonRule | undefined {
    return this.#poison;
  }

  /** Requests currently held by a stall. */
  get held(): number {
    return this.#held;
  }

  takeForcedFailure(): ForcedFailure | undefined {
    return this.#forced.shift();
  }

  async waitWhileStalled(): Promise<void> {
    while (this.#stall) {
      this.#held++;
      try {
        await this.#stall.promise;
      } finally {
        this.#held--;
      }
    }
  }
}

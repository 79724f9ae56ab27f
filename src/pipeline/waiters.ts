// A list of parked async callers that one side wakes all at once; each caller re-checks its own
// condition after waking. Promises are made only for callers that actually have to wait.

interface Parked {
  resolve: () => void;
  reject: (err: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

export class Waiters {
  #parked: Parked[] = [];
  #failure: Error | undefined;

  get size(): number {
    return this.#parked.length;
  }

  /** Resolves on the next wakeAll(); rejects on fail() or when `signal` aborts. Takes nothing on abort. */
  wait(signal?: AbortSignal): Promise<void> {
    if (this.#failure) return Promise.reject(this.#failure);
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const parked: Parked = { resolve, reject, signal, onAbort: undefined };
      if (signal) {
        parked.onAbort = () => {
          this.#parked = this.#parked.filter((p) => p !== parked);
          reject(signal.reason as Error);
        };
        signal.addEventListener("abort", parked.onAbort, { once: true });
      }
      this.#parked.push(parked);
    });
  }

  wakeAll(): void {
    if (this.#parked.length === 0) return;
    const woken = this.#parked;
    this.#parked = [];
    for (const p of woken) {
      if (p.onAbort) p.signal?.removeEventListener("abort", p.onAbort);
      p.resolve();
    }
  }

  /** Rejects every parked caller and every later wait() with `err`. */
  fail(err: Error): void {
    this.#failure = err;
    const woken = this.#parked;
    this.#parked = [];
    for (const p of woken) {
      if (p.onAbort) p.signal?.removeEventListener("abort", p.onAbort);
      p.reject(err);
    }
  }
}

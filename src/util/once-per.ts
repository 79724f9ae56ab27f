// "Say it once per window": a condition that persists (a refused commit, a failing lookup) gets one
// log line per window per key instead of one per attempt, and the next line comes at once after it
// cleared.

export class OncePer {
  readonly #ms: number;
  readonly #last = new Map<string, number>();

  constructor(windowMs: number) {
    this.#ms = windowMs;
  }

  /** True when `key` was not said within the window (and marks it said now). */
  due(key: string, nowMs: number): boolean {
    const last = this.#last.get(key);
    if (last !== undefined && nowMs - last < this.#ms) return false;
    this.#last.set(key, nowMs);
    return true;
  }

  /** A condition ended: the next occurrence is said at once. */
  clear(key?: string): void {
    if (key === undefined) this.#last.clear();
    else this.#last.delete(key);
  }
}

// What a backfill tells the operator while it runs: on a terminal one live line (files done/total,
// rows, bytes, rate, ETA) rewritten in place; otherwise one log line every few seconds.
import type { Clock } from "../util/clock.ts";

export interface ProgressOptions {
  clock: Clock;
  write: (text: string) => void;
  /** A terminal: rewrite one line in place. */
  tty: boolean;
  /** How often the line is redrawn (TTY) or a log line printed (otherwise). */
  intervalMs?: number;
}

const MIB = 1024 * 1024;

export class BackfillProgress {
  readonly #o: ProgressOptions;
  readonly #started: number;
  #filesTotal = 0;
  #filesDone = 0;
  #bytesTotal = 0;
  #bytesDone = 0;
  #rows = 0;
  /** Bytes received of the file being handed on now. */
  #current = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(opts: ProgressOptions) {
    this.#o = opts;
    this.#started = opts.clock.monotonic();
  }

  start(): void {
    const every = this.#o.intervalMs ?? (this.#o.tty ? 250 : 10_000);
    this.#timer = setInterval(() => {
      this.tick();
    }, every);
    this.#timer.unref();
  }

  /** Files (and their listed sizes) about to be loaded. */
  plan(files: number, bytes: number): void {
    this.#filesTotal += files;
    this.#bytesTotal += bytes;
  }

  /** `n` more rows handed on; `fileBytes`: bytes received so far of the file they came from. */
  rows(n: number, fileBytes?: number): void {
    this.#rows += n;
    if (fileBytes !== undefined) this.#current = fileBytes;
  }

  fileDone(bytes: number): void {
    this.#filesDone++;
    this.#bytesDone += bytes;
    this.#current = 0;
    // A terminal sees every file land; a log gets its periodic line only.
    if (this.#o.tty) this.#emit();
  }

  stop(): void {
    clearInterval(this.#timer);
    if (this.#o.tty) this.#o.write(`\r\x1b[K${this.line()}\n`);
  }

  line(): string {
    const secs = Math.max(0.001, (this.#o.clock.monotonic() - this.#started) / 1000);
    const rate = Math.round(this.#rows / secs);
    const done = this.#bytesDone + this.#current;
    const byteRate = done / secs;
    const left = Math.max(0, this.#bytesTotal - done);
    const eta = byteRate > 0 ? `${Math.round(left / byteRate)}s` : "?";
    return (
      `backfill: files ${this.#filesDone}/${this.#filesTotal}, rows ${this.#rows}, ` +
      `${(done / MIB).toFixed(1)}/${(this.#bytesTotal / MIB).toFixed(1)} MiB, ` +
      `${rate} rows/s, ETA ${eta}`
    );
  }

  /** One redraw (terminal) or one log line (otherwise); the timer calls it, tests too. */
  tick(): void {
    this.#emit();
  }

  #emit(): void {
    if (this.#o.tty) this.#o.write(`\r\x1b[K${this.line()}`);
    else this.#o.write(`sf2loki ${this.line()}\n`);
  }
}

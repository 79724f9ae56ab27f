// The leader's liveness watchdog (#17). Every deadline bounds one call; this bounds the whole: a leader
// whose pipeline has work but makes no progress (no commit lands, no push is attempted), or whose
// checkpoint store has failed for as long, is stalled: it says so on /readyz and resigns its lease so
// another replica can lead. A process whose pipeline has work and attempts nothing at all, for longer
// still, is wedged: /healthz fails so Kubernetes restarts it. Outages that are being retried are not
// wedged: a restart would not help them.
import type { Meter } from "@opentelemetry/api";
import type { Logger } from "../obs/logger.ts";
import { StateGauge } from "../obs/metrics.ts";
import type { ProgressReport } from "../pipeline/progress.ts";
import type { StoreFailure } from "../state/tracked-store.ts";
import type { Clock } from "../util/clock.ts";

const TICK_MS = 1000;

export interface WatchdogOptions {
  /** `service.watchdog.stall_timeout` in ms; 0 disables stall detection. */
  stallMs: number;
  /** `service.watchdog.liveness_timeout` in ms; 0 disables the liveness failure. */
  livenessMs: number;
  clock: Clock;
  meter: Meter;
  logger: Logger;
  leading: () => boolean;
  progress: () => ProgressReport | undefined;
  storeFailing: () => StoreFailure | undefined;
  /**
   * A deliberate hold (the egress budget pause): while paused the pipeline is not stalled or wedged,
   * and the time until `resumedAtMono` is not counted against it once it resumes.
   */
  hold?: () => { paused: boolean; resumedAtMono: number | undefined };
  /** Called once per stall, with the reason; returns whether the lease was handed over. */
  onStall: (reason: string) => boolean;
}

const seconds = (ms: number): string => `${Math.round(ms / 1000)}s`;

export class Watchdog {
  readonly #opts: WatchdogOptions;
  readonly #stalledGauge: StateGauge;
  readonly #wedgedGauge: StateGauge;
  readonly #resignations;
  #stalled: string | undefined;
  #wedged: string | undefined;

  constructor(opts: WatchdogOptions) {
    this.#opts = opts;
    this.#stalledGauge = new StateGauge(
      opts.meter,
      "sf2loki_watchdog_stalled",
      "1 while this leader's pipeline has work but makes no progress (or its store fails) past stall_timeout.",
    );
    this.#wedgedGauge = new StateGauge(
      opts.meter,
      "sf2loki_watchdog_wedged",
      "1 while the pipeline has work and has attempted nothing past liveness_timeout (/healthz fails).",
    );
    this.#resignations = opts.meter.createCounter("sf2loki_watchdog_resignations", {
      description: "Leases this replica gave up because its pipeline stalled.",
    });
    this.#stalledGauge.set(0);
    this.#wedgedGauge.set(0);
    this.#resignations.add(0);
  }

  /** Why this leader is stalled (for /readyz), or undefined. */
  get stalled(): string | undefined {
    return this.#stalled;
  }

  /** Why this process needs a restart (for /healthz), or undefined. */
  get wedged(): string | undefined {
    return this.#wedged;
  }

  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      try {
        await this.#opts.clock.sleep(TICK_MS, signal);
      } catch {
        return;
      }
      this.tick();
    }
  }

  /** One evaluation (the loop's body; tests call it directly). */
  tick(): void {
    const { stallMs, livenessMs, clock } = this.#opts;
    const progress = this.#progress();
    this.#setWedged(
      livenessMs > 0 && progress?.pending && progress.sinceAttemptMs >= livenessMs
        ? `wedged: work pending and nothing attempted (no push, no commit) for ${seconds(progress.sinceAttemptMs)}`
        : undefined,
    );
    if (stallMs <= 0 || !this.#opts.leading()) {
      // A standby has nothing to stall: clear quietly (after a resignation this is the expected state).
      this.#stalled = undefined;
      this.#stalledGauge.set(0);
      return;
    }
    const failing = this.#opts.storeFailing();
    const failingMs = failing ? clock.monotonic() - failing.sinceMono : 0;
    let reason: string | undefined;
    if (progress?.pending && progress.sinceProgressMs >= stallMs) {
      reason = `pipeline stalled: work pending but no commit or push attempt for ${seconds(progress.sinceProgressMs)}`;
    } else if (failing && failingMs >= stallMs) {
      reason = `checkpoint store failing for ${seconds(failingMs)}: ${failing.error}`;
    }
    const fresh = reason !== undefined && this.#stalled === undefined;
    this.#setStalled(reason);
    if (fresh && reason !== undefined) {
      const handedOver = this.#opts.onStall(reason);
      if (handedOver) this.#resignations.add(1);
      this.#opts.logger.error(
        { reason, handed_over: handedOver },
        handedOver
          ? "watchdog: this leader is stalled; resigning the lease so another replica leads"
          : "watchdog: this leader is stalled and there is no other replica to hand over to; /readyz fails " +
              "until it recovers, /healthz once nothing is attempted for service.watchdog.liveness_timeout",
      );
    }
  }

  /** The pipeline's progress with a deliberate hold taken out: no work pending while held. */
  #progress(): ProgressReport | undefined {
    const progress = this.#opts.progress();
    const hold = this.#opts.hold?.();
    if (!progress || !hold) return progress;
    if (hold.paused) return { ...progress, pending: false };
    if (hold.resumedAtMono === undefined) return progress;
    const sinceResume = this.#opts.clock.monotonic() - hold.resumedAtMono;
    return {
      pending: progress.pending,
      sinceProgressMs: Math.min(progress.sinceProgressMs, sinceResume),
      sinceAttemptMs: Math.min(progress.sinceAttemptMs, sinceResume),
    };
  }

  #setStalled(reason: string | undefined): void {
    if (reason === undefined && this.#stalled !== undefined) {
      this.#opts.logger.info("watchdog: the pipeline makes progress again");
    }
    this.#stalled = reason;
    this.#stalledGauge.set(reason === undefined ? 0 : 1);
  }

  #setWedged(reason: string | undefined): void {
    if (reason !== undefined && this.#wedged === undefined) {
      this.#opts.logger.error(
        { reason },
        "watchdog: the process is wedged; /healthz fails so it is restarted",
      );
    }
    this.#wedged = reason;
    this.#wedgedGauge.set(reason === undefined ? 0 : 1);
  }
}

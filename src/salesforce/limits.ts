// The org-limits poller (spec A §2.2, spec B §6.6): GET /limits every poll interval while leader,
// exported as observable gauges so the last values keep being reported between polls (#90).
import { metrics, type Attributes, type Counter, type Meter } from "@opentelemetry/api";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import type { RestClient } from "./rest.ts";

export interface OrgLimit {
  max: number;
  remaining: number;
}

/** Entries with integer `Max` and `Remaining`; anything else is skipped silently. */
export function parseLimits(body: Record<string, unknown>): Map<string, OrgLimit> {
  const out = new Map<string, OrgLimit>();
  for (const [name, v] of Object.entries(body)) {
    if (v === null || typeof v !== "object") continue;
    const { Max: max, Remaining: remaining } = v as Record<string, unknown>;
    if (Number.isInteger(max) && Number.isInteger(remaining)) {
      out.set(name, { max: max as number, remaining: remaining as number });
    }
  }
  return out;
}

export class LimitsPoller {
  readonly #rest: RestClient;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #intervalMs: number;
  readonly #errors: Counter;
  readonly #attributes: Attributes;
  #limits = new Map<string, OrgLimit>();

  constructor(opts: {
    rest: RestClient;
    pollIntervalMs?: number;
    clock?: Clock;
    logger?: Logger;
    meter?: Meter;
    /** Added to every observation: `{org}` under multi-org, so two orgs' limits do not collide. */
    attributes?: Attributes;
  }) {
    this.#rest = opts.rest;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "salesforce-limits" });
    this.#intervalMs = opts.pollIntervalMs ?? 300_000;
    this.#attributes = opts.attributes ?? {};
    const meter = opts.meter ?? metrics.getMeter("sf2loki");
    this.#errors = meter.createCounter("sf2loki_salesforce_limits_poll_errors", {
      description: "Failed polls of the org limits",
    });
    const max = meter.createObservableGauge("sf2loki_salesforce_limit_max", {
      description: "Org limit maximum",
    });
    const remaining = meter.createObservableGauge("sf2loki_salesforce_limit_remaining", {
      description: "Org limit remaining",
    });
    meter.addBatchObservableCallback(
      (r) => {
        for (const [name, l] of this.#limits) {
          r.observe(max, l.max, { ...this.#attributes, limit_name: name });
          r.observe(remaining, l.remaining, { ...this.#attributes, limit_name: name });
        }
      },
      [max, remaining],
    );
  }

  /** The values of the last successful poll. */
  get limits(): ReadonlyMap<string, OrgLimit> {
    return this.#limits;
  }

  /** One poll; a failure is counted and logged, never thrown. True on success. */
  async pollOnce(signal?: AbortSignal): Promise<boolean> {
    try {
      const body = await this.#rest.getJson(this.#rest.path("limits"), {
        signal,
        where: "org limits",
        api: "limits",
      });
      this.#limits = parseLimits(body);
      return true;
    } catch (err) {
      if (signal?.aborted) return false;
      this.#errors.add(1, this.#attributes);
      this.#log.warn(
        { err: err instanceof Error ? err.message : String(err) },
        "could not poll the org limits; retrying next interval",
      );
      return false;
    }
  }

  /** Polls at once, then every interval, until `signal` aborts. Never rejects. */
  async run(signal: AbortSignal): Promise<void> {
    while (!signal.aborted) {
      await this.pollOnce(signal);
      try {
        await this.#clock.sleep(this.#intervalMs, signal);
      } catch {
        return;
      }
    }
  }
}

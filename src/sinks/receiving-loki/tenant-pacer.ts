// Living with a tenant's ingestion limit (#26). Loki's distributor takes a tenant's pushes through a
// token bucket (`ingestion_rate_mb` per second, `ingestion_burst_size_mb` deep) and answers 429 to a
// request that does not fit, naming the rate. Backing off and re-sending the same body cannot help when
// the body is larger than the burst: it never fits. So once Loki names the limit, this sink's requests
// are cut below the size that was refused (halving down to one entry) and paced to a share of the named
// rate, streaming lane first (the same RateGate as the egress caps). Loki's limit can be raised at run
// time, so after a quiet spell the pacing is lifted and the request bound doubled: if the limit still
// binds, the next 429 teaches it again within a few pushes.
import type { Attributes, Counter, Meter } from "@opentelemetry/api";
import type { LogEntry } from "../../model.ts";
import type { Logger } from "../../obs/logger.ts";
import type { Clock } from "../../util/clock.ts";
import { RateGate, laneOfBatch } from "../../egress/rate-gate.ts";
import type { DataRefusal, IsolationHooks } from "../wire/isolate.ts";
import { LokiRateLimitedError, type RateLimitNotice } from "./rate-limited.ts";

/** The share of Loki's named rate this sink paces to: under it, so the tenant's bucket refills. */
export const PACE_SHARE = 0.97;
/** Without a 429 for this long, the pacing is lifted and the request bound doubled (a raised limit). */
export const RELAX_AFTER_MS = 5 * 60_000;
/** One WARN per this while limited. */
const WARN_EVERY_MS = 60_000;

/** What Loki counts against the limit: the line and the structured metadata (names and values). */
export function lokiBytesOf(entries: readonly LogEntry[]): number {
  let n = 0;
  for (const e of entries) n += e.lineBytes + e.metadataChars;
  return n;
}

/** The delivery loop's hooks a pacer fills: which pieces to send, when, and what a 429 taught. */
export type PacingHooks = Pick<IsolationHooks<DataRefusal>, "split" | "pace" | "landed" | "again">;

export interface TenantPacerDeps {
  clock: Clock;
  logger: Logger;
  meter: Meter;
  /** Where, for messages: the push URL. */
  where: string;
  /** The settings' place in the config (`sink.loki`, `orgs[<org>].sink.loki`). */
  configKey: string;
  /** The destination's `tenant_id`: its series carry it as `tenant` (none without one). */
  tenant: string | undefined;
}

interface PacerMetrics {
  responses: Counter;
  waitSeconds: Counter;
}

function createPacerMetrics(meter: Meter, attributes: Attributes): PacerMetrics {
  const responses = meter.createCounter("sf2loki_loki_rate_limited_responses", {
    description:
      "Loki 429 answers that named the tenant's ingestion rate limit (the push is split and paced)",
  });
  const waitSeconds = meter.createCounter("sf2loki_loki_rate_limited_seconds", {
    description: "Seconds pushes waited to stay under the ingestion rate Loki named for the tenant",
    unit: "s",
  });
  responses.add(0, attributes);
  waitSeconds.add(0, attributes);
  return { responses, waitSeconds };
}

export class TenantPacer {
  readonly #deps: TenantPacerDeps;
  readonly #metrics: PacerMetrics;
  readonly #attributes: Attributes;
  readonly #gate: RateGate;
  /** Bytes per second paced to; 0 while Loki has not limited this sink (or the pacing was lifted). */
  #rate = 0;
  /** The limit Loki last named, bytes per second; 0 before any. */
  #limit = 0;
  #maxRequestBytes = Number.POSITIVE_INFINITY;
  /**
   * Loki's bytes per byte of lokiBytesOf, learnt from a 429 that counted the refused request: 1 for
   * the push API; above it over OTLP, where Loki also counts the resource and its own fields.
   */
  #scale = 1;
  #lastLimitedMono = Number.NEGATIVE_INFINITY;
  #lastWarnMono = Number.NEGATIVE_INFINITY;
  #landedSinceWarn = 0;
  #limitedSinceWarn = 0;

  constructor(deps: TenantPacerDeps) {
    this.#deps = deps;
    this.#attributes = deps.tenant ? { tenant: deps.tenant } : {};
    this.#metrics = createPacerMetrics(deps.meter, this.#attributes);
    this.#gate = new RateGate({ linesPerSecond: 0, bytesPerSecond: 0 }, deps.clock);
    deps.meter
      .createObservableGauge("sf2loki_loki_ingestion_limit_bytes_per_second", {
        description: "The ingestion rate limit Loki last named in a 429 for this tenant (0: none seen)",
        unit: "By/s",
      })
      .addCallback((r) => {
        r.observe(this.#limit, this.#attributes);
      });
  }

  /** The request bound now, in Loki's bytes (Infinity while none was learned). */
  get maxRequestBytes(): number {
    return this.#maxRequestBytes;
  }

  /** Bytes per second paced to now (0: not pacing). */
  get rate(): number {
    return this.#rate;
  }

  /** `part` cut in order into requests under the learned bound; undefined when it fits whole. */
  split(part: readonly LogEntry[]): LogEntry[][] | undefined {
    const max = this.#maxRequestBytes;
    if (part.length < 2 || !Number.isFinite(max) || this.#bytesOf(part) <= max) return undefined;
    const chunks: LogEntry[][] = [];
    let chunk: LogEntry[] = [];
    let bytes = 0;
    for (const e of part) {
      const b = (e.lineBytes + e.metadataChars) * this.#scale;
      if (chunk.length > 0 && bytes + b > max) {
        chunks.push(chunk);
        chunk = [];
        bytes = 0;
      }
      chunk.push(e);
      bytes += b;
    }
    chunks.push(chunk);
    return chunks;
  }

  /** Its hooks for the delivery loop (wire/isolate.ts): a 429 naming the limit sends the part again. */
  hooks(signal: AbortSignal | undefined): PacingHooks {
    return {
      split: (part) => this.split(part),
      pace: (part) => this.pace(part, signal),
      landed: (part) => {
        this.landed(part);
      },
      again: (err, part) => {
        if (!(err instanceof LokiRateLimitedError)) return false;
        this.limited(err.notice, part);
        return true;
      },
    };
  }

  /** Waits until `part` may go at the paced rate; rejects with the signal's reason when it aborts. */
  async pace(part: readonly LogEntry[], signal: AbortSignal | undefined): Promise<void> {
    this.#relaxIfQuiet();
    if (this.#rate === 0) return;
    const waited = await this.#gate.acquire(0, this.#bytesOf(part), laneOfBatch(part), signal);
    if (waited > 0) this.#metrics.waitSeconds.add(waited / 1000, this.#attributes);
  }

  /** `part` landed: counted for the achieved rate in the next WARN. */
  landed(part: readonly LogEntry[]): void {
    if (this.#rate > 0) this.#landedSinceWarn += this.#bytesOf(part);
  }

  /** Loki refused `part` for the tenant's rate: learn the bound and the rate, and say so (at most once a minute). */
  limited(notice: RateLimitNotice, part: readonly LogEntry[]): void {
    const now = this.#deps.clock.monotonic();
    this.#metrics.responses.add(1, this.#attributes);
    this.#lastLimitedMono = now;
    this.#limitedSinceWarn++;
    const ours = lokiBytesOf(part);
    if (notice.bytes !== undefined && ours > 0 && notice.bytes > ours) this.#scale = notice.bytes / ours;
    const bytes = notice.bytes ?? this.#bytesOf(part);
    if (part.length > 1) this.#maxRequestBytes = Math.min(this.#maxRequestBytes, Math.floor(bytes / 2));
    if (notice.limitBytesPerSecond !== undefined) this.#limit = notice.limitBytesPerSecond;
    // Without a named limit, half of what was just refused per second: cautious, and relaxed later.
    const rate = this.#limit > 0 ? this.#limit * PACE_SHARE : Math.max(1, bytes / 2);
    const pacing = this.#rate > 0;
    this.#rate = pacing ? Math.min(this.#rate, rate) : rate;
    // A refused request takes nothing from the tenant's bucket at Loki. The first refusal is usually a
    // request too large for the burst, so the pacing starts with a second of rate at hand; a refusal
    // while already paced means the bucket really is spent, and the next push waits for it to refill.
    this.#gate.setBytesPerSecond(this.#rate, pacing);
    if (now - this.#lastWarnMono >= WARN_EVERY_MS) this.#warn(notice, part, now);
  }

  /** What Loki counts of `entries` against the limit, as far as it has said. */
  #bytesOf(entries: readonly LogEntry[]): number {
    return lokiBytesOf(entries) * this.#scale;
  }

  #warn(notice: RateLimitNotice, part: readonly LogEntry[], now: number): void {
    const since = this.#lastWarnMono;
    const seconds = Number.isFinite(since) ? (now - since) / 1000 : 0;
    const achieved = seconds > 0 ? Math.round(this.#landedSinceWarn / seconds) : undefined;
    const { configKey } = this.#deps;
    const limit =
      notice.limitBytesPerSecond !== undefined
        ? `its ingestion limit of ${notice.limitBytesPerSecond} bytes/s`
        : "an ingestion limit it did not quantify";
    const single =
      part.length === 1
        ? `; a single entry of ${Math.round(this.#bytesOf(part))} bytes was refused, so it may exceed the tenant's burst`
        : "";
    this.#deps.logger.warn(
      {
        tenant: notice.tenant,
        limit_bytes_per_second: notice.limitBytesPerSecond ?? null,
        paced_bytes_per_second: Math.round(this.#rate),
        max_request_bytes: Number.isFinite(this.#maxRequestBytes) ? this.#maxRequestBytes : null,
        achieved_bytes_per_second: achieved ?? null,
        rate_limited_responses: this.#limitedSinceWarn,
      },
      `Loki at ${this.#deps.where} is rate-limiting tenant '${notice.tenant}' at ${limit}: pushes are ` +
        `split and paced to ${Math.round(this.#rate)} bytes/s, nothing is dropped and the sources wait` +
        (achieved !== undefined
          ? ` (${achieved} bytes/s landed over the last ${Math.round(seconds)} s)`
          : "") +
        `${single}. To ship faster, raise ingestion_rate_mb and ingestion_burst_size_mb for tenant ` +
        `'${notice.tenant}' in Loki's limits; to stay under them without 429s, set ` +
        `${configKey}.egress.max_bytes_per_second`,
    );
    this.#lastWarnMono = now;
    this.#landedSinceWarn = 0;
    this.#limitedSinceWarn = 0;
  }

  #relaxIfQuiet(): void {
    if (this.#rate === 0 && !Number.isFinite(this.#maxRequestBytes)) return;
    const now = this.#deps.clock.monotonic();
    if (now - this.#lastLimitedMono < RELAX_AFTER_MS) return;
    this.#lastLimitedMono = now;
    this.#rate = 0;
    this.#gate.setBytesPerSecond(0, false);
    this.#maxRequestBytes = this.#maxRequestBytes * 2;
    this.#deps.logger.info(
      { max_request_bytes: this.#maxRequestBytes },
      `no rate-limit answer from Loki at ${this.#deps.where} for ${RELAX_AFTER_MS / 60_000} min: ` +
        "pushing unpaced again, with larger requests",
    );
  }
}

/** The pacer of a sink pushing to `url` with the settings at `configKey`, its series under the tenant. */
export function tenantPacerFor(
  url: URL,
  configKey: string,
  tenant: string | undefined,
  deps: Pick<TenantPacerDeps, "clock" | "logger" | "meter">,
): TenantPacer {
  return new TenantPacer({ ...deps, where: `${url.origin}${url.pathname}`, configKey, tenant });
}

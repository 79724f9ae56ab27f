// How far back a lookup can see what Loki has not flushed yet (#35). A Loki querier asks its ingesters
// only for entries dated within `query_ingesters_within` (3h by default) of now; older entries are
// read from the store, where they appear once their chunk is flushed. So an entry dated 5 h back that
// a previous run pushed minutes before it died is invisible to every query, and a resume that looks
// it up finds nothing and sends it again. Loki drops most identical re-sends itself (those still in
// the stream's head block), not all: measured on Loki 3.4.6, 3 000 re-sent entries dated 4 h back
// were stored 3 003 times, one copy per block cut.
//
// Two things help the resume: knowing the horizon (read from the Loki's own /config, so a Loki whose
// operator raised it is taken at its word), and, where the operator allows it, flushing the ingester
// before looking up entries past it (`sink.loki.reconcile.flush_url`): a flushed chunk is read from
// the store at once (measured: within 70 ms of the flush queue draining).
import { parse } from "yaml";
import { parseDuration } from "../../config/duration.ts";
import { describeError } from "../../errors.ts";
import type { Clock } from "../../util/clock.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";
import type { LookupHorizon } from "../sink.ts";

/** Loki's default `querier.query_ingesters_within`, assumed when its /config cannot be read. */
export const DEFAULT_INGESTERS_WITHIN_MS = 3 * 3_600_000;
/** How long a flush may take to drain Loki's flush queue before the lookups go on regardless. */
const FLUSH_DRAIN_MS = 30_000;
const FLUSH_POLL_MS = 100;
/** How long the ingester must read idle, with no chunk newly flushed, before the flush counts as done. */
const FLUSH_SETTLE_MS = 300;

/**
 * What a Loki ingester's /metrics says about its flushes. The queue length drops when a flush op is
 * taken off the queue, before its chunk is written (pkg/ingester/flush.go), so an empty queue alone
 * can be read while the last chunk is still on its way to the store: CI saw a lookup straight after it
 * miss that chunk. A chunk is in the store once its flush request is counted as flushed or failed;
 * Loki 3.4.6 exports no request counter, so there only a settled quiet (FLUSH_SETTLE_MS) guards it.
 */
export interface FlushProgress {
  queued: number;
  /** Flush requests begun but neither flushed nor failed yet; 0 when Loki does not export the counters. */
  writing: number;
  /** Chunks flushed so far, every reason. */
  flushed: number;
}

export function flushProgressOf(metricsText: string): FlushProgress {
  const sum = (name: string): number | undefined => {
    let total: number | undefined;
    for (const m of metricsText.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, "gm")))
      total = (total ?? 0) + Number(m[1]);
    return total;
  };
  const requests = sum("loki_ingester_chunks_flush_requests_total");
  const flushed = sum("loki_ingester_chunks_flushed_total") ?? 0;
  const failed = sum("loki_ingester_chunks_flush_failures_total") ?? 0;
  return {
    queued: sum("loki_ingester_flush_queue_length") ?? 0,
    writing: requests === undefined ? 0 : Math.max(0, requests - flushed - failed),
    flushed,
  };
}

export interface HorizonOptions {
  /** `auto` (read `<base>/config`), or milliseconds (0: Loki asks its ingesters for every range). */
  setting: "auto" | number;
  /** The query API's base URL; Loki serves /config beside it. */
  base: URL;
  authHeaders: Readonly<Record<string, string>>;
  responseMs: number;
  /** `sink.loki.reconcile.flush_url`, or undefined: never flush. */
  flushUrl: URL | undefined;
  clock: Clock;
  /** A dispatcher for an origin (the lookup's own for its base; another for a flush URL elsewhere). */
  dispatcherFor: (origin: string) => Dispatcher;
}

/** `querier.query_ingesters_within` of a Loki's /config YAML, in ms; undefined when it has none. */
export function ingestersWithinOf(configYaml: string): number | undefined {
  const doc = parse(configYaml) as { querier?: { query_ingesters_within?: unknown } } | null;
  const raw = doc?.querier?.query_ingesters_within;
  if (typeof raw !== "string" && typeof raw !== "number") return undefined;
  return parseDuration(String(raw));
}

/** Reads the horizon once and flushes on request; shared by every resume of one lookup. */
export class HorizonReader {
  readonly #opts: HorizonOptions;
  #known: Promise<LookupHorizon> | undefined;

  constructor(opts: HorizonOptions) {
    this.#opts = opts;
  }

  /** Whether a flush is configured: entries past the horizon can then be made visible. */
  get canFlush(): boolean {
    return this.#opts.flushUrl !== undefined;
  }

  /** The horizon, read on first use; a Loki that does not serve /config is assumed at its default. */
  horizon(signal: AbortSignal): Promise<LookupHorizon> {
    const { setting } = this.#opts;
    if (setting !== "auto")
      return Promise.resolve({ ms: setting === 0 ? undefined : setting, source: "setting" });
    this.#known ??= this.#read(signal).catch((err: unknown): LookupHorizon => ({
      ms: DEFAULT_INGESTERS_WITHIN_MS,
      source: "assumed",
      why: describeError(err),
    }));
    return this.#known;
  }

  /**
   * Asks the ingester to flush every open chunk, then waits (bounded) until its flush queue is empty
   * and every chunk taken off it is written, so that what it held is read from the store. Throws when
   * the flush URL does not answer 2xx.
   */
  async flush(signal: AbortSignal): Promise<void> {
    const url = this.#opts.flushUrl;
    if (url === undefined) return;
    const status = await this.#call(url, "POST", signal);
    if (status.code < 200 || status.code >= 300) {
      throw new Error(`POST ${url.href} answered HTTP ${status.code} (${status.text.slice(0, 200)})`);
    }
    const metrics = new URL("/metrics", url);
    const deadline = this.#opts.clock.monotonic() + FLUSH_DRAIN_MS;
    // Done when the polls have found nothing queued, nothing being written and the same count flushed
    // for FLUSH_SETTLE_MS: between taking an op off the queue and finishing its write, a poll reads idle.
    let quiet: { since: number; flushed: number } | undefined;
    for (;;) {
      const answer = await this.#call(metrics, "GET", signal).catch(() => undefined);
      // No metrics to read: the flush was accepted, and the lookups that follow are all we can do.
      if (answer === undefined || answer.code !== 200) return;
      const p = flushProgressOf(answer.text);
      const now = this.#opts.clock.monotonic();
      const idle = p.queued === 0 && p.writing === 0;
      if (!idle || quiet?.flushed !== p.flushed)
        quiet = idle ? { since: now, flushed: p.flushed } : undefined;
      if ((quiet !== undefined && now - quiet.since >= FLUSH_SETTLE_MS) || now >= deadline) return;
      await this.#opts.clock.sleep(FLUSH_POLL_MS, signal);
    }
  }

  async #read(signal: AbortSignal): Promise<LookupHorizon> {
    const url = new URL(`${this.#opts.base.pathname.replace(/\/$/, "")}/config`, this.#opts.base);
    const answer = await this.#call(url, "GET", signal);
    if (answer.code !== 200) throw new Error(`GET ${url.href} answered HTTP ${answer.code}`);
    const ms = ingestersWithinOf(answer.text);
    if (ms === undefined) throw new Error(`GET ${url.href} names no querier.query_ingesters_within`);
    return { ms: ms === 0 ? undefined : ms, source: "config" };
  }

  async #call(
    url: URL,
    method: "GET" | "POST",
    signal: AbortSignal,
  ): Promise<{ code: number; text: string }> {
    const { responseMs, authHeaders } = this.#opts;
    const res = await this.#opts.dispatcherFor(url.origin).request({
      origin: url.origin,
      path: `${url.pathname}${url.search}`,
      method,
      headers: { ...authHeaders, "user-agent": "sf2loki" },
      headersTimeout: responseMs,
      bodyTimeout: responseMs,
      signal,
    });
    return { code: res.statusCode, text: await res.body.text() };
  }
}

// An org's users as far as they have been looked up: the bounded, TTL'd cache behind `enrich.users`,
// and the background loop that fills it with batched User queries.
//
// The hot path only reads: `fieldsOf` answers from memory or says "not yet" and queues the id. The
// loop is the only thing that talks to Salesforce, at most `max_queries_per_hour` times an hour, so
// a slow or failing User query delays no entry and costs no more API requests than configured.
// It starts by reading the org's most recently active users in one query (the warm-up), so that the
// first entries after a start already carry their user instead of each user's first few seconds
// going out bare; a source waits for that at most `warmup_wait`, once.
import { metrics, type Meter } from "@opentelemetry/api";
import type { EnrichUsersConfig } from "../../config/schema-enrich.ts";
import type { Labels } from "../../model.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import type { SalesforceUser } from "../../salesforce/user-query.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import { OncePer } from "../../util/once-per.ts";

/**
 * The structured metadata names, documented in docs/enrich.md; `Username` as Salesforce spells the
 * field, so `| Username="…"` reads the same on a LoginEvent (which carries it) and an ELF row (which does not).
 */
export const USER_METADATA = {
  username: "Username",
  name: "UserFullName",
  profile: "UserProfile",
  role: "UserRole",
  isActive: "UserIsActive",
} as const;

export interface UserLookup {
  /** The users among `ids` Salesforce knows. */
  byIds(ids: readonly string[], signal: AbortSignal): Promise<SalesforceUser[]>;
  /** The `limit` most recently active users, and how many REST requests (pages) that took. */
  recent(limit: number, signal: AbortSignal): Promise<{ users: SalesforceUser[]; requests: number }>;
}

interface Cached {
  /** null: Salesforce has no such user (or it is not visible to the integration user). */
  fields: Labels | null;
  expiresAt: number;
}

const HOUR_MS = 3_600_000;
const WARN_EVERY_MS = 60_000;
const FAILURE_BACKOFF_BASE_MS = 1_000;
const FAILURE_BACKOFF_CAP_MS = 60_000;

export function metadataOf(user: SalesforceUser): Labels {
  const out: Labels = {};
  if (user.username !== null) out[USER_METADATA.username] = user.username;
  if (user.name !== null) out[USER_METADATA.name] = user.name;
  if (user.profile !== null) out[USER_METADATA.profile] = user.profile;
  if (user.role !== null) out[USER_METADATA.role] = user.role;
  if (user.isActive !== null) out[USER_METADATA.isActive] = String(user.isActive);
  return out;
}

export class UserDirectory {
  readonly #s: EnrichUsersConfig;
  readonly #lookup: UserLookup;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #warn = new OncePer(WARN_EVERY_MS);
  /** Insertion order is lookup order: the first key is the one looked up longest ago. */
  readonly #cache = new Map<string, Cached>();
  /** Ids waiting for a query, in the order they were first met; bounded by `max_users`. */
  readonly #pending = new Set<string>();
  readonly #inFlight = new Set<string>();
  /** When each query of the last hour went: the per-hour bound is a sliding window. */
  readonly #sent: number[] = [];
  #wake: (() => void) | undefined;
  #failuresSinceWarn = 0;
  #runs = 0;
  #stop: AbortController | undefined;
  #loop: Promise<void> | undefined;
  #warm: Promise<void> | undefined;
  readonly counts = { hit: 0, stale: 0, miss: 0, unknown: 0, dropped: 0, queriesOk: 0, queriesFailed: 0 };

  constructor(opts: {
    settings: EnrichUsersConfig;
    lookup: UserLookup;
    clock?: Clock;
    logger?: Logger;
    meter?: Meter;
  }) {
    this.#s = opts.settings;
    this.#lookup = opts.lookup;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "enrich-users" });
    this.#observe(opts.meter ?? metrics.getMeter("sf2loki"));
  }

  /**
   * The metadata for an 18-character user id, or undefined when it is not known yet (queued) or
   * Salesforce has no such user. Never waits; a stale answer is returned and refreshed behind it.
   */
  fieldsOf(id: string): Labels | undefined {
    const cached = this.#cache.get(id);
    if (cached === undefined) {
      this.counts.miss++;
      this.#queue(id);
      return undefined;
    }
    if (cached.expiresAt <= this.#clock.now()) {
      this.counts.stale++;
      this.#queue(id);
    } else if (cached.fields === null) this.counts.unknown++;
    else this.counts.hit++;
    return cached.fields ?? undefined;
  }

  get size(): number {
    return this.#cache.size;
  }

  /**
   * Runs the fill loop while at least one holder has it open: every source of the org shares one
   * directory and one loop, and the loop ends with the last of them. The returned function lets go.
   */
  open(): () => void {
    this.#runs++;
    if (this.#runs === 1) {
      const stop = new AbortController();
      this.#stop = stop;
      let warmed!: () => void;
      this.#warm = new Promise<void>((resolve) => (warmed = resolve));
      this.#loop = this.#fill(stop.signal, warmed);
    }
    let open = true;
    return () => {
      if (!open) return;
      open = false;
      if (--this.#runs === 0) {
        this.#stop?.abort();
        this.#wake?.();
      }
    };
  }

  /**
   * Resolves when the warm-up answered or failed, or after `warmup_wait`, whichever is first; a
   * source awaits it once, before its first entry (it has been pulling that entry meanwhile).
   */
  async ready(signal: AbortSignal): Promise<void> {
    const warm = this.#warm;
    if (warm === undefined || this.#s.warmup_wait <= 0) return;
    const stop = new AbortController();
    const both = AbortSignal.any([signal, stop.signal]);
    try {
      await Promise.race([warm, this.#sleep(this.#s.warmup_wait, both)]);
    } finally {
      stop.abort();
    }
  }

  /** Resolves once the loop of the last `open` has ended (tests, clean shutdown). */
  async closed(): Promise<void> {
    await this.#loop;
  }

  #queue(id: string): void {
    if (this.#pending.has(id) || this.#inFlight.has(id)) return;
    if (this.#pending.size >= this.#s.max_users) {
      this.counts.dropped++;
      return;
    }
    this.#pending.add(id);
    if (this.#pending.size === 1 || this.#pending.size >= this.#s.batch_size) this.#wake?.();
  }

  async #fill(signal: AbortSignal, warmed: () => void): Promise<void> {
    try {
      await this.#warmUp(signal);
    } finally {
      warmed();
    }
    let backoff = FAILURE_BACKOFF_BASE_MS;
    while (!signal.aborted) {
      if (this.#pending.size === 0) await this.#nudged(signal, Infinity);
      if (signal.aborted as boolean) return;
      if (this.#pending.size === 0) continue;
      // The first unknown id waits for company; a full batch goes at once.
      if (this.#pending.size < this.#s.batch_size) await this.#nudged(signal, this.#s.batch_wait, true);
      await this.#sleep(this.#windowWaitMs(), signal);
      if (signal.aborted as boolean) return;
      const ids = this.#take();
      if (ids.length === 0) continue;
      if (await this.#query(ids, signal)) {
        backoff = FAILURE_BACKOFF_BASE_MS;
        continue;
      }
      // An abort ends this sleep at once, and the loop with it.
      await this.#sleep(backoff, signal);
      backoff = Math.min(backoff * 2, FAILURE_BACKOFF_CAP_MS);
    }
  }

  /** Milliseconds until one more query fits in the last hour's `max_queries_per_hour`. */
  #windowWaitMs(): number {
    const now = this.#clock.monotonic();
    while (this.#sent.length > 0 && this.#sent[0]! <= now - HOUR_MS) this.#sent.shift();
    if (this.#sent.length < this.#s.max_queries_per_hour) return 0;
    return this.#sent[0]! + HOUR_MS - now;
  }

  /** Skipped when a previous run of the loop already filled the cache (a source restarted). */
  async #warmUp(signal: AbortSignal): Promise<void> {
    if (this.#cache.size > 0 || signal.aborted) return;
    const at = this.#clock.monotonic();
    try {
      const { users, requests } = await this.#lookup.recent(this.#s.max_users, signal);
      for (let i = 0; i < requests; i++) this.#sent.push(at);
      this.counts.queriesOk += requests;
      const expiresAt = this.#clock.now() + this.#s.ttl;
      for (const user of users) this.#remember(user.id, { fields: metadataOf(user), expiresAt });
      this.#log.info(
        { users: users.length, requests },
        "enrich.users read the org's most recently active users",
      );
    } catch (err) {
      if (signal.aborted as boolean) return;
      this.#sent.push(at);
      this.#failed(err);
    }
  }

  #take(): string[] {
    const ids: string[] = [];
    const now = this.#clock.now();
    for (const id of this.#pending) {
      const cached = this.#cache.get(id);
      if (cached !== undefined && cached.expiresAt > now) {
        this.#pending.delete(id);
        continue;
      }
      ids.push(id);
      if (ids.length === this.#s.batch_size) break;
    }
    for (const id of ids) {
      this.#pending.delete(id);
      this.#inFlight.add(id);
    }
    return ids;
  }

  /** One User query; true when it answered. A failure puts its ids back for the next attempt. */
  async #query(ids: string[], signal: AbortSignal): Promise<boolean> {
    this.#sent.push(this.#clock.monotonic());
    try {
      const users = await this.#lookup.byIds(ids, signal);
      this.counts.queriesOk++;
      const expiresAt = this.#clock.now() + this.#s.ttl;
      const found = new Map(users.map((u) => [u.id, u]));
      for (const id of ids) {
        const user = found.get(id);
        this.#remember(id, { fields: user ? metadataOf(user) : null, expiresAt });
      }
      if (this.#failuresSinceWarn > 0) {
        this.#log.info(
          { failedQueries: this.#failuresSinceWarn },
          "the User lookup of enrich.users answers again; entries carry the user fields again",
        );
        this.#failuresSinceWarn = 0;
        this.#warn.clear();
      }
      return true;
    } catch (err) {
      if (signal.aborted) return false;
      for (const id of ids) if (this.#pending.size < this.#s.max_users) this.#pending.add(id);
      this.#failed(err);
      return false;
    } finally {
      for (const id of ids) this.#inFlight.delete(id);
    }
  }

  #failed(err: unknown): void {
    this.counts.queriesFailed++;
    this.#failuresSinceWarn++;
    if (!this.#warn.due("query", this.#clock.now())) return;
    this.#log.warn(
      {
        err: err instanceof Error ? err.message : String(err),
        failedQueries: this.#failuresSinceWarn,
        waitingIds: this.#pending.size,
      },
      "the User lookup of enrich.users failed; entries go on to Loki without the user fields until it answers (nothing is held back). Check the integration user can read User, Profile and UserRole; retrying",
    );
  }

  #remember(id: string, entry: Cached): void {
    this.#cache.delete(id);
    this.#cache.set(id, entry);
    while (this.#cache.size > this.#s.max_users) {
      const oldest = this.#cache.keys().next().value;
      if (oldest === undefined) break;
      this.#cache.delete(oldest);
    }
  }

  /** Waits for `ms`, or until `#queue` nudges (only while `untilFull`, when the batch filled up). */
  async #nudged(signal: AbortSignal, ms: number, untilFull = false): Promise<void> {
    const local = new AbortController();
    this.#wake = () => {
      if (!untilFull || this.#pending.size >= this.#s.batch_size || signal.aborted) local.abort();
    };
    try {
      await this.#sleep(ms, AbortSignal.any([signal, local.signal]));
    } finally {
      this.#wake = undefined;
    }
  }

  async #sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (ms <= 0) return;
    if (ms === Infinity) {
      await new Promise<void>((resolve) => {
        if (signal.aborted) resolve();
        else
          signal.addEventListener(
            "abort",
            () => {
              resolve();
            },
            { once: true },
          );
      });
      return;
    }
    await this.#clock.sleep(ms, signal).catch(() => undefined);
  }

  #observe(meter: Meter): void {
    const entries = meter.createObservableCounter("sf2loki_enrich_user_entries", {
      description:
        "Entries with a user id by what the cache knew: hit, stale (attached, refreshing), miss (shipped without, queued), unknown (no such user)",
    });
    const queries = meter.createObservableCounter("sf2loki_enrich_user_queries", {
      description: "User queries of enrich.users (one REST API request each), by outcome",
    });
    const dropped = meter.createObservableCounter("sf2loki_enrich_user_ids_dropped", {
      description: "Unknown user ids not queued because max_users ids were already waiting",
    });
    const cached = meter.createObservableGauge("sf2loki_enrich_users_cached", {
      description: "Users (and unknown ids) held in the enrich.users cache",
    });
    meter.addBatchObservableCallback(
      (r) => {
        const c = this.counts;
        for (const result of ["hit", "stale", "miss", "unknown"] as const)
          r.observe(entries, c[result], { result });
        r.observe(queries, c.queriesOk, { outcome: "ok" });
        r.observe(queries, c.queriesFailed, { outcome: "error" });
        r.observe(dropped, c.dropped);
        r.observe(cached, this.#cache.size);
      },
      [entries, queries, dropped, cached],
    );
  }
}

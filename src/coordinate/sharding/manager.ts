// Orgs sharded across replicas without a central coordinator. Every replica:
// * holds a membership lease of its own (renewed like any lease), and lists the others' every half
//   renew interval: a member is live while its lease carries a holder and its version keeps changing
//   within its ttl, judged on this replica's monotonic clock like every other lease;
// * computes the same assignment from the live members and the shard holders it reads (rendezvous.ts):
//   each member's fair share, sticky to what it holds, the rest by highest random weight;
// * runs one gated LeaseCoordinator per shard: it reads (and times) every shard's lease all the time,
//   but claims only shards assigned to it, so an expired shard is taken the moment it is assigned;
// * hands surplus shards over cleanly (drain, commit, release) when the assignment moves them, so the
//   new owner takes them without waiting for a ttl.
// Each shard's lease fences that shard's checkpoint writes only: losing one shard leaves the others.
import type { Meter } from "@opentelemetry/api";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import type { LossReason } from "../coordinator.ts";
import { LeaseCoordinator } from "../lease/coordinator.ts";
import { pause, withTimeout } from "../lease/waits.ts";
import { desiredShards, fairShare } from "./rendezvous.ts";
import type { ListedMember, ShardLeaseSpace } from "./space.ts";

export interface ShardCallbacks {
  /** Awaited once a shard's lease is won: that shard's sources and pipeline start here. */
  onAcquire(shard: string): Promise<void>;
  /** Awaited once per acquisition; "stopping" (hand-over, shutdown) still holds the lease, "lost" not. */
  onLose(shard: string, why: LossReason): Promise<void>;
  signal: AbortSignal;
}

export interface ShardManagerOptions {
  space: ShardLeaseSpace;
  /** The shard names (org names). */
  shards: readonly string[];
  identity: string;
  ttlMs: number;
  renewIntervalMs: number;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** A shard's persisted checkpoint epoch, its lease's epoch floor (#99). */
  epochFloor?: (shard: string) => ((signal: AbortSignal) => Promise<number | undefined>) | undefined;
}

export interface ShardStatus {
  replica: string;
  members: string[];
  fair_share: number;
  shards: { org: string; epoch: number; since: string }[];
}

interface Seen {
  version: string;
  /** When this version was first seen. */
  atMono: number;
  /** Whether the lease was ever seen to change: only then is it known to be renewed by someone. */
  changed: boolean;
  /** A member that appeared after this replica settled counts from then on: once it has settled too. */
  newcomerUntilMono: number;
  holder: string;
  ttlMs: number | undefined;
}

export class ShardManager {
  readonly identity: string;
  readonly shards: readonly string[];
  readonly #space: ShardLeaseSpace;
  readonly #ttlMs: number;
  readonly #tickMs: number;
  readonly #renewMs: number;
  readonly #callTimeoutMs: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #coordinators = new Map<string, LeaseCoordinator>();
  readonly #membership: LeaseCoordinator;
  readonly #seen = new Map<string, Seen>();
  /** Wall ms each held shard was acquired, for /statusz. */
  readonly #since = new Map<string, number>();
  #members: string[] = [];
  #desired = new Set<string>();
  /**
   * False until our own membership lease is listed and we have watched the others for a renew interval
   * and a tick (see #refresh): until then, claim nothing.
   */
  #settled = false;
  #startedMono = 0;
  #stopping = false;
  readonly #moves: { add(n: number, attrs: Record<string, string>): void } | undefined;

  constructor(opts: ShardManagerOptions) {
    this.identity = opts.identity;
    this.shards = [...new Set(opts.shards)];
    this.#space = opts.space;
    this.#ttlMs = opts.ttlMs;
    this.#tickMs = opts.renewIntervalMs / 2;
    this.#renewMs = opts.renewIntervalMs;
    this.#callTimeoutMs = opts.renewIntervalMs / 2;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({
      component: "sharding",
      leases: opts.space.where,
      identity: opts.identity,
    });
    const common = {
      identity: opts.identity,
      ttlMs: opts.ttlMs,
      renewIntervalMs: opts.renewIntervalMs,
      clock: this.#clock,
      ...(opts.logger ? { logger: opts.logger } : {}),
    };
    for (const shard of this.shards) {
      const floor = opts.epochFloor?.(shard);
      this.#coordinators.set(
        shard,
        new LeaseCoordinator({
          ...common,
          backend: opts.space.shard(shard),
          gate: () => this.#settled && !this.#stopping && this.#desired.has(shard),
          standbyPollMs: this.#tickMs,
          ...(floor ? { epochFloor: floor } : {}),
        }),
      );
    }
    this.#membership = new LeaseCoordinator({ ...common, backend: opts.space.member(opts.identity) });
    this.#moves = opts.meter ? this.#instrument(opts.meter) : undefined;
  }

  /** The coordinator of one shard: its fence guards that shard's checkpoint store. */
  coordinator(shard: string): LeaseCoordinator {
    const c = this.#coordinators.get(shard);
    if (!c) throw new Error(`no shard named ${shard}`);
    return c;
  }

  /** Live members as last listed, this replica included, sorted. */
  get members(): readonly string[] {
    return this.#members;
  }

  get fairShare(): number {
    return fairShare(this.shards.length, Math.max(1, this.#members.length));
  }

  /** Shards this replica leads right now. */
  held(): string[] {
    return this.shards.filter((s) => this.#coordinators.get(s)!.isLeader);
  }

  /** The shards the assignment gives this replica, as last computed. */
  desired(): string[] {
    return this.shards.filter((s) => this.#desired.has(s));
  }

  /** Holds its whole assignment, or every shard is held by someone. */
  ready(): boolean {
    if (!this.#settled) return false;
    if (this.desired().every((s) => this.#coordinators.get(s)!.isLeader)) return true;
    return this.shards.every((s) => {
      const c = this.#coordinators.get(s)!;
      return c.isLeader || c.holder !== undefined;
    });
  }

  status(): ShardStatus {
    return {
      replica: this.identity,
      members: [...this.#members],
      fair_share: this.fairShare,
      shards: this.held().map((org) => ({
        org,
        epoch: this.#coordinators.get(org)!.epoch,
        since: new Date(this.#since.get(org) ?? this.#clock.now()).toISOString(),
      })),
    };
  }

  /**
   * Runs until `signal` aborts: every held shard then drains (onLose "stopping") and is released, and
   * the membership lease last. Rejects with the first callback failure, after everything stopped.
   */
  async run(callbacks: ShardCallbacks): Promise<void> {
    this.#startedMono = this.#clock.monotonic();
    const shardsStop = new AbortController();
    const memberStop = new AbortController();
    const onStop = (): void => {
      this.#stopping = true;
      shardsStop.abort();
    };
    if (callbacks.signal.aborted) onStop();
    else callbacks.signal.addEventListener("abort", onStop, { once: true });
    const membership = this.#membership.run({
      onAcquire: () => Promise.resolve(),
      onLose: () => Promise.resolve(),
      signal: memberStop.signal,
    });
    const ticking = this.#tick(shardsStop.signal);
    const runs = [...this.#coordinators].map(([shard, c]) =>
      c.run({
        signal: shardsStop.signal,
        onAcquire: async () => {
          this.#since.set(shard, this.#clock.now());
          this.#moves?.add(1, { org: shard, reason: "acquired" });
          this.#log.info({ org: shard, epoch: c.epoch }, "shard acquired: starting its pipeline");
          await callbacks.onAcquire(shard);
        },
        onLose: async (why) => {
          if (why === "lost") this.#log.warn({ org: shard }, "shard lost: its pipeline stops");
          try {
            await callbacks.onLose(shard, why);
          } finally {
            this.#since.delete(shard);
            this.#moves?.add(1, { org: shard, reason: why === "lost" ? "lost" : "released" });
          }
        },
      }),
    );
    const settled = await Promise.allSettled(runs);
    shardsStop.abort();
    await ticking;
    memberStop.abort();
    await membership;
    await this.#space.close?.();
    callbacks.signal.removeEventListener("abort", onStop);
    const failed = settled.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  async #tick(signal: AbortSignal): Promise<void> {
    do await this.#refresh(signal);
    while (await pause(this.#clock, this.#tickMs, signal));
  }

  /** One listing of the members, then the assignment from it. A failed listing keeps the last view. */
  async #refresh(signal: AbortSignal): Promise<void> {
    let listed: ListedMember[];
    try {
      listed = await withTimeout(
        this.#clock,
        this.#callTimeoutMs,
        signal,
        "listing of membership leases",
        (s) => this.#space.listMembers(s),
      );
    } catch (err) {
      if (!signal.aborted)
        this.#log.warn({ err }, "cannot list the membership leases; keeping the last view");
      return;
    }
    this.#observe(listed);
    await this.#collect(signal);
    // Claim nothing until our own membership is listed and we have watched the others for a renew
    // interval and a tick: by then every live member's lease has changed under our eyes, so a cold start
    // or a join sees the same members as everyone else and does not grab shards it must hand back.
    if (
      !this.#settled &&
      this.#membership.isLeader &&
      this.#clock.monotonic() - this.#startedMono >= this.#renewMs + this.#tickMs &&
      listed.some((m) => m.snapshot.record?.holder === this.identity)
    ) {
      this.#settled = true;
    }
    this.#rebalance();
  }

  #observe(listed: ListedMember[]): void {
    const now = this.#clock.monotonic();
    const keys = new Set<string>();
    for (const { key, snapshot } of listed) {
      keys.add(key);
      const prev = this.#seen.get(key);
      const holder = snapshot.record?.holder ?? "";
      const ttlMs = snapshot.record?.ttlMs;
      if (prev?.version === snapshot.version) continue;
      this.#seen.set(key, {
        version: snapshot.version,
        atMono: now,
        changed: prev !== undefined,
        // A joiner claims nothing for a renew interval and a tick (see #refresh): hand it shards only
        // then, or they would sit released and unclaimed meanwhile.
        newcomerUntilMono:
          prev?.newcomerUntilMono ?? (this.#settled ? now + this.#renewMs + this.#tickMs : now),
        holder,
        ttlMs,
      });
    }
    for (const key of this.#seen.keys()) if (!keys.has(key)) this.#seen.delete(key);
    // A lease seen changing within its ttl is a live member. One never seen changing (this replica just
    // started, or the member just died) counts only while it still holds a shard: a replica that replaces
    // a dead one must not wait a ttl for the dead one's membership before taking what it is handed.
    const holding = new Set<string>();
    for (const c of this.#coordinators.values()) if (c.holder !== undefined) holding.add(c.holder);
    const live = new Set<string>([this.identity]);
    for (const seen of this.#seen.values()) {
      if (seen.holder === "" || seen.holder === this.identity) continue;
      if (now - seen.atMono >= (seen.ttlMs ?? this.#ttlMs)) continue;
      if (now < seen.newcomerUntilMono) continue;
      if (seen.changed || holding.has(seen.holder)) live.add(seen.holder);
    }
    const members = [...live].sort();
    if (members.join("\n") !== this.#members.join("\n")) {
      this.#log.info(
        { members, fair_share: fairShare(this.shards.length, members.length) },
        "shard members changed",
      );
    }
    this.#members = members;
  }

  /**
   * Deletes membership leases of replicas long gone (released a ttl ago, or silent for three), so a
   * Deployment's ever-new pod names do not pile up Leases or objects. Only the first live member does
   * it, each delete conditional on the version it judged, and any failure is left for the next round.
   */
  async #collect(signal: AbortSignal): Promise<void> {
    const remove = this.#space.removeMember?.bind(this.#space);
    if (!remove || this.#members[0] !== this.identity || !this.#settled) return;
    const now = this.#clock.monotonic();
    for (const [key, seen] of this.#seen) {
      if (seen.holder === this.identity) continue;
      const ttl = seen.ttlMs ?? this.#ttlMs;
      const idle = now - seen.atMono;
      if (!((seen.holder === "" && idle >= ttl) || idle >= 3 * ttl)) continue;
      try {
        await withTimeout(
          this.#clock,
          this.#callTimeoutMs,
          signal,
          `delete of membership lease ${key}`,
          (s) => remove(key, seen.version, s),
        );
        this.#seen.delete(key);
        this.#log.info(
          { member: seen.holder || undefined, lease: key },
          "removed the membership lease of a departed replica",
        );
      } catch (err) {
        if (signal.aborted) return;
        this.#log.warn(
          { err, lease: key },
          "cannot remove a departed replica's membership lease; retrying later",
        );
      }
    }
  }

  #rebalance(): void {
    const holders = new Map<string, string | undefined>();
    for (const [shard, c] of this.#coordinators) holders.set(shard, c.isLeader ? this.identity : c.holder);
    const desired = desiredShards(this.shards, this.#members, this.identity, holders);
    const previous = this.#desired;
    this.#desired = desired;
    if (!this.#settled || this.#stopping) return;
    for (const shard of desired) if (!previous.has(shard)) this.#coordinators.get(shard)!.nudge();
    for (const [shard, c] of this.#coordinators) {
      if (c.isLeader && !desired.has(shard)) c.handOver("rebalance: the assignment moved this shard away");
    }
  }

  #instrument(meter: Meter): { add(n: number, attrs: Record<string, string>): void } {
    meter
      .createObservableGauge("sf2loki_shard_leader", {
        description: "1 while this replica holds the org's shard lease, else 0",
      })
      .addCallback((r) => {
        for (const [org, c] of this.#coordinators) r.observe(c.isLeader ? 1 : 0, { org });
      });
    meter
      .createObservableGauge("sf2loki_shard_fair_share", {
        description: "ceil(shards / live replicas): the most shards this replica should hold",
      })
      .addCallback((r) => {
        r.observe(this.fairShare);
      });
    meter
      .createObservableGauge("sf2loki_shard_members", {
        description: "Live replicas (membership leases) as this replica last listed them",
      })
      .addCallback((r) => {
        r.observe(this.#members.length);
      });
    return meter.createCounter("sf2loki_shard_moves", {
      description:
        "Shard moves on this replica by reason: acquired, released (clean hand-over or stop), lost",
    });
  }
}

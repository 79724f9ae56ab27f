// Drives sharded replicas (one ShardManager each) on virtual time against real lease backends: the
// shared ManualClock only moves between steps, once no lease call is in flight, as in harness.ts.
import assert from "node:assert/strict";
import type { LossReason } from "../../src/coordinate/coordinator.ts";
import type {
  LeaseBackend,
  LeaseRecord,
  LeaseSnapshot,
  LeaseWriteResult,
} from "../../src/coordinate/lease/backend.ts";
import { ShardManager } from "../../src/coordinate/sharding/manager.ts";
import type { ListedMember, ShardLeaseSpace } from "../../src/coordinate/sharding/space.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryStore } from "../support/fakes.ts";
import { ReplicaClock, settleLeaseCalls } from "./harness.ts";

export const TTL = 30_000;
export const RENEW = 10_000;
export const ORGS = ["acme", "globex", "initech", "umbrella", "hooli", "stark"];

/** Counts one replica's lease calls in flight, so the sim knows when it is parked on the clock. */
export class CallTracker {
  inflight = 0;
  /** A partitioned or dead replica's calls may hang; settling does not wait for them. */
  hanging = false;

  async track<T>(fn: () => Promise<T>): Promise<T> {
    this.inflight++;
    try {
      return await fn();
    } finally {
      this.inflight--;
    }
  }
}

class TrackedLease implements LeaseBackend {
  readonly kind: string;
  readonly where: string;
  readonly confirmDelayMs: number;
  readonly #inner: LeaseBackend;
  readonly #t: CallTracker;

  constructor(inner: LeaseBackend, tracker: CallTracker) {
    this.#inner = inner;
    this.#t = tracker;
    this.kind = inner.kind;
    this.where = inner.where;
    this.confirmDelayMs = inner.confirmDelayMs;
  }

  open(signal: AbortSignal): Promise<void> {
    return this.#t.track(() => this.#inner.open?.(signal) ?? Promise.resolve());
  }

  close(): Promise<void> {
    return this.#t.track(() => this.#inner.close?.() ?? Promise.resolve());
  }

  read(signal: AbortSignal): Promise<LeaseSnapshot | undefined> {
    return this.#t.track(() => this.#inner.read(signal));
  }

  write(record: LeaseRecord, expected: string | undefined, signal: AbortSignal): Promise<LeaseWriteResult> {
    return this.#t.track(() => this.#inner.write(record, expected, signal));
  }

  readEpochFloor(signal: AbortSignal): Promise<number | undefined> {
    return this.#t.track(() => this.#inner.readEpochFloor?.(signal) ?? Promise.resolve(undefined));
  }

  recordEpoch(epoch: number, signal: AbortSignal): Promise<void> {
    return this.#t.track(() => this.#inner.recordEpoch?.(epoch, signal) ?? Promise.resolve());
  }
}

export class TrackedSpace implements ShardLeaseSpace {
  readonly kind: string;
  readonly where: string;
  readonly #inner: ShardLeaseSpace;
  readonly #t: CallTracker;

  constructor(inner: ShardLeaseSpace, tracker: CallTracker) {
    this.#inner = inner;
    this.#t = tracker;
    this.kind = inner.kind;
    this.where = inner.where;
  }

  shard(shard: string): LeaseBackend {
    return new TrackedLease(this.#inner.shard(shard), this.#t);
  }

  member(identity: string): LeaseBackend {
    return new TrackedLease(this.#inner.member(identity), this.#t);
  }

  listMembers(signal: AbortSignal): Promise<ListedMember[]> {
    return this.#t.track(() => this.#inner.listMembers(signal));
  }

  removeMember(key: string, version: string, signal: AbortSignal): Promise<void> {
    return this.#t.track(() => this.#inner.removeMember?.(key, version, signal) ?? Promise.resolve());
  }

  close(): Promise<void> {
    return this.#t.track(() => this.#inner.close?.() ?? Promise.resolve());
  }
}

export class ShardReplica {
  readonly name: string;
  readonly manager: ShardManager;
  readonly clock: ReplicaClock;
  readonly tracker: CallTracker;
  readonly ctl = new AbortController();
  /** `+org`, `-org:lost`, `-org:stopping`, in order. */
  readonly events: string[] = [];
  /** The virtual (monotonic) time of each event, same index. */
  readonly at: number[] = [];
  /** One fenced checkpoint store per shard, as the sharded app wires them. */
  readonly stores = new Map<string, MemoryStore>();
  done: Promise<void> = Promise.resolve();
  finished = false;

  constructor(name: string, manager: ShardManager, clock: ReplicaClock, tracker: CallTracker) {
    this.name = name;
    this.manager = manager;
    this.clock = clock;
    this.tracker = tracker;
    for (const org of manager.shards) {
      const store = new MemoryStore();
      const c = manager.coordinator(org);
      store.setFence({
        check: () => {
          c.checkFence();
        },
        epoch: () => c.epoch,
        signal: () => c.termSignal,
      });
      this.stores.set(org, store);
    }
  }

  start(log: string[]): this {
    this.done = this.manager.run({
      signal: this.ctl.signal,
      onAcquire: async (org) => {
        this.events.push(`+${org}`);
        this.at.push(this.clock.monotonic());
        log.push(`${this.name}+${org}`);
        await this.stores.get(org)!.claimTerm();
      },
      onLose: async (org, why: LossReason) => {
        this.events.push(`-${org}:${why}`);
        this.at.push(this.clock.monotonic());
        log.push(`${this.name}-${org}:${why}`);
        // The drain's last commit: only a clean stop or hand-over may still write.
        if (why === "stopping") await this.stores.get(org)!.commit("drained", this.name);
      },
    });
    this.done.then(
      () => (this.finished = true),
      () => (this.finished = true),
    );
    return this;
  }

  held(): string[] {
    return this.manager.held();
  }

  /** When `event` last happened, in virtual ms. */
  when(event: string): number | undefined {
    const i = this.events.lastIndexOf(event);
    return i < 0 ? undefined : this.at[i];
  }

  /** Whether this replica's store for `org` accepts a write right now. */
  async canCommit(org: string): Promise<boolean> {
    try {
      await this.stores.get(org)!.commit("probe", this.name);
      return true;
    } catch (err) {
      assert.equal((err as { code?: string }).code, "SF2LOKI_STATE_FENCED");
      return false;
    }
  }
}

export class ShardSim {
  readonly clock = new ManualClock({ auto: false });
  readonly replicas: ShardReplica[] = [];
  readonly log: string[] = [];
  readonly #makeSpace: (replica: string) => ShardLeaseSpace;
  readonly #orgs: readonly string[];
  onStep: (() => Promise<void> | void) | undefined;

  constructor(makeSpace: (replica: string) => ShardLeaseSpace, orgs: readonly string[] = ORGS) {
    this.#makeSpace = makeSpace;
    this.#orgs = orgs;
  }

  replica(name: string): ShardReplica {
    const tracker = new CallTracker();
    const clock = new ReplicaClock(this.clock);
    const manager = new ShardManager({
      space: new TrackedSpace(this.#makeSpace(name), tracker),
      shards: this.#orgs,
      identity: name,
      ttlMs: TTL,
      renewIntervalMs: RENEW,
      clock,
    });
    const replica = new ShardReplica(name, manager, clock, tracker).start(this.log);
    this.replicas.push(replica);
    return replica;
  }

  settle(): Promise<void> {
    return settleLeaseCalls(() => this.replicas.some((r) => !r.tracker.hanging && r.tracker.inflight > 0));
  }

  async until(cond: () => boolean, what: string, maxMs = 5 * TTL, stepMs = 100): Promise<number> {
    await this.settle();
    let elapsed = 0;
    while (!cond()) {
      if (elapsed >= maxMs)
        assert.fail(`${what}: not reached within ${maxMs} virtual ms; ${this.describe()}`);
      this.clock.advance(stepMs);
      elapsed += stepMs;
      await this.settle();
      await this.onStep?.();
    }
    return elapsed;
  }

  async run(ms: number, stepMs = 100): Promise<void> {
    let elapsed = 0;
    await this.until(() => (elapsed += stepMs) > ms, "run", ms + stepMs, stepMs);
  }

  /** Every org held by exactly one live replica, and each replica holding `perReplica` of them. */
  balanced(live: ShardReplica[], perReplica: number[]): boolean {
    const counts = live.map((r) => r.held().length).sort();
    const holders = this.#orgs.map((o) => live.filter((r) => r.held().includes(o)).length);
    return holders.every((n) => n === 1) && counts.join() === [...perReplica].sort().join();
  }

  /** org -> replica holding it. */
  holders(): Map<string, string> {
    const out = new Map<string, string>();
    for (const r of this.replicas) for (const o of r.held()) out.set(o, r.name);
    return out;
  }

  describe(): string {
    return this.replicas.map((r) => `${r.name}=[${r.held().join(",")}]`).join(" ");
  }

  async stopAll(): Promise<void> {
    for (const r of this.replicas) r.ctl.abort();
    await this.until(() => this.replicas.every((r) => r.finished), "every replica stops", 10 * TTL, 1000);
  }
}

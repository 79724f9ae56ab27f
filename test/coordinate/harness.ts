// Drives lease coordinators on virtual time. Every replica shares one ManualClock (auto off); the
// harness advances it step by step and, between steps, waits until no lease call is in flight, so
// real I/O (files, loopback HTTP) finishes before time moves on. No test sleeps for real.
import type { LossReason } from "../../src/coordinate/coordinator.ts";
import assert from "node:assert/strict";
import { ManualClock, type Clock } from "../../src/util/clock.ts";
import type {
  LeaseBackend,
  LeaseRecord,
  LeaseSnapshot,
  LeaseWriteResult,
} from "../../src/coordinate/lease/backend.ts";
import { LeaseCoordinator } from "../../src/coordinate/lease/coordinator.ts";

export const TTL = 30_000;
export const RENEW = 10_000;
/** ttl - renew/2: when a leader that cannot renew stops trusting its lease. */
export const FENCE_AFTER = TTL - RENEW / 2;

export interface WriteLog {
  replica: string;
  record: LeaseRecord;
  ok: boolean;
}

/**
 * Yields to the event loop until `busy()` has been false for three turns in a row: the lease calls
 * answered on loopback have landed and nothing new started. Real sockets, so real (short) time.
 */
export async function settleLeaseCalls(busy: () => boolean): Promise<void> {
  const started = performance.now();
  let quiet = 0;
  while (quiet < 3) {
    await new Promise((resolve) => setImmediate(resolve));
    quiet = busy() ? 0 : quiet + 1;
    if (performance.now() - started > 10_000) throw new Error("lease calls did not settle within 10 s");
  }
}

/** Counts calls in flight so the harness knows when a replica is parked on the clock. */
export class TrackedBackend implements LeaseBackend {
  readonly kind: string;
  readonly where: string;
  readonly confirmDelayMs: number;
  inflight = 0;
  /** Calls of a partitioned replica are expected to hang; settling does not wait for them. */
  hanging = false;
  readonly #inner: LeaseBackend;
  readonly #replica: string;
  readonly #log: WriteLog[];

  constructor(inner: LeaseBackend, replica: string, log: WriteLog[]) {
    this.#inner = inner;
    this.#replica = replica;
    this.#log = log;
    this.kind = inner.kind;
    this.where = inner.where;
    this.confirmDelayMs = inner.confirmDelayMs;
  }

  open(signal: AbortSignal): Promise<void> {
    return this.#track(() => this.#inner.open?.(signal) ?? Promise.resolve());
  }

  close(): Promise<void> {
    return this.#track(() => this.#inner.close?.() ?? Promise.resolve());
  }

  read(signal: AbortSignal): Promise<LeaseSnapshot | undefined> {
    return this.#track(() => this.#inner.read(signal));
  }

  write(record: LeaseRecord, expected: string | undefined, signal: AbortSignal): Promise<LeaseWriteResult> {
    return this.#track(async () => {
      const result = await this.#inner.write(record, expected, signal);
      this.#log.push({ replica: this.#replica, record, ok: result.ok });
      return result;
    });
  }

  readEpochFloor(signal: AbortSignal): Promise<number | undefined> {
    return this.#track(() => this.#inner.readEpochFloor?.(signal) ?? Promise.resolve(undefined));
  }

  recordEpoch(epoch: number, signal: AbortSignal): Promise<void> {
    return this.#track(() => this.#inner.recordEpoch?.(epoch, signal) ?? Promise.resolve());
  }

  async #track<T>(fn: () => Promise<T>): Promise<T> {
    this.inflight++;
    try {
      return await fn();
    } finally {
      this.inflight--;
    }
  }
}

/** One replica's view of the shared clock: a crash freezes it (no wakeups), a skew shifts its wall time. */
export class ReplicaClock implements Clock {
  frozen = false;
  readonly #base: ManualClock;
  readonly #wallOffsetMs: number;

  constructor(base: ManualClock, wallOffsetMs = 0) {
    this.#base = base;
    this.#wallOffsetMs = wallOffsetMs;
  }

  now(): number {
    return this.#base.now() + this.#wallOffsetMs;
  }

  monotonic(): number {
    return this.#base.monotonic();
  }

  random(): number {
    return this.#base.random();
  }

  async sleep(ms: number, signal?: AbortSignal): Promise<void> {
    if (!this.frozen) await this.#base.sleep(ms, signal);
    // A crashed process never wakes up again; only the test's final abort unwinds it.
    if (this.frozen) {
      await new Promise<void>((_, reject) => {
        if (signal?.aborted) reject(signal.reason as Error);
        signal?.addEventListener("abort", () => {
          reject(signal.reason as Error);
        });
      });
    }
  }
}

export class Replica {
  /** `+` for onAcquire, `-` for onLose, in order. */
  readonly events: string[] = [];
  /** isLeader as seen inside each callback. */
  readonly leaderInCallbacks: boolean[] = [];
  /** The reason each onLose was given, and whether the term signal had aborted by then. */
  readonly losses: { why: LossReason; termAborted: boolean }[] = [];
  readonly ctl = new AbortController();
  done: Promise<void> = Promise.resolve();
  /** True once `run` returned or threw. */
  finished = false;
  readonly name: string;
  readonly coordinator: LeaseCoordinator;
  readonly backend: TrackedBackend;
  readonly clock: ReplicaClock;

  constructor(name: string, coordinator: LeaseCoordinator, backend: TrackedBackend, clock: ReplicaClock) {
    this.name = name;
    this.coordinator = coordinator;
    this.backend = backend;
    this.clock = clock;
  }

  start(shared: string[]): this {
    this.done = this.coordinator.run({
      onAcquire: () => {
        this.events.push("+");
        this.leaderInCallbacks.push(this.coordinator.isLeader);
        shared.push(`${this.name}+`);
        return Promise.resolve();
      },
      onLose: (why) => {
        this.losses.push({ why, termAborted: this.coordinator.termSignal.aborted });
        this.events.push("-");
        this.leaderInCallbacks.push(this.coordinator.isLeader);
        shared.push(`${this.name}-`);
        return Promise.resolve();
      },
      signal: this.ctl.signal,
    });
    this.done.then(
      () => (this.finished = true),
      () => (this.finished = true),
    );
    return this;
  }

  get isLeader(): boolean {
    return this.coordinator.isLeader;
  }

  get epoch(): number {
    return this.coordinator.epoch;
  }

  fenced(): boolean {
    try {
      this.coordinator.checkFence();
      return false;
    } catch (err) {
      assert.equal((err as { code?: string }).code, "SF2LOKI_STATE_FENCED");
      return true;
    }
  }
}

export interface ReplicaOptions {
  identity?: string;
  wallOffsetMs?: number;
  epochFloor?: (signal: AbortSignal) => Promise<number | undefined>;
}

export class Sim {
  readonly clock = new ManualClock({ auto: false });
  /** Acquire/lose events of every replica, in order. */
  readonly events: string[] = [];
  readonly writes: WriteLog[] = [];
  readonly replicas: Replica[] = [];
  readonly #makeBackend: (name: string) => LeaseBackend;

  constructor(makeBackend: (name: string) => LeaseBackend) {
    this.#makeBackend = makeBackend;
  }

  /** Builds and starts a replica (a fresh process: no memory of earlier ones). */
  replica(name: string, opts: ReplicaOptions = {}): Replica {
    const backend = new TrackedBackend(this.#makeBackend(name), name, this.writes);
    const clock = new ReplicaClock(this.clock, opts.wallOffsetMs);
    const coordinator = new LeaseCoordinator({
      backend,
      identity: opts.identity ?? name,
      ttlMs: TTL,
      renewIntervalMs: RENEW,
      clock,
      ...(opts.epochFloor ? { epochFloor: opts.epochFloor } : {}),
    });
    const replica = new Replica(name, coordinator, backend, clock).start(this.events);
    this.replicas.push(replica);
    return replica;
  }

  /** Waits until every replica that is not partitioned has no lease call in flight. */
  settle(): Promise<void> {
    return settleLeaseCalls(() => this.replicas.some((r) => !r.backend.hanging && r.backend.inflight > 0));
  }

  /** Advances virtual time in `stepMs` steps until `cond` holds; returns the virtual ms it took. */
  async until(cond: () => boolean, what: string, maxMs = 5 * TTL, stepMs = 100): Promise<number> {
    await this.settle();
    let elapsed = 0;
    while (!cond()) {
      if (elapsed >= maxMs) assert.fail(`${what}: not reached within ${maxMs} virtual ms`);
      await this.#step(stepMs);
      elapsed += stepMs;
    }
    return elapsed;
  }

  /** Advances `ms` of virtual time. */
  async run(ms: number, stepMs = 100): Promise<void> {
    await this.settle();
    for (let elapsed = 0; elapsed < ms; elapsed += stepMs) await this.#step(stepMs);
  }

  async #step(stepMs: number): Promise<void> {
    this.clock.advance(stepMs);
    await this.settle();
    this.onStep?.();
  }

  /** Called after every step; tests use it to check an invariant at every instant. */
  onStep: (() => void) | undefined;

  /** Stops one replica cleanly and waits for its run to return. */
  async stop(replica: Replica): Promise<void> {
    replica.ctl.abort();
    await this.until(() => replica.finished, `${replica.name} stops`);
    await replica.done;
  }

  /** Test teardown: stops everyone, letting virtual time run out any call that hangs. */
  async stopAll(): Promise<void> {
    for (const r of this.replicas) r.ctl.abort();
    await this.until(() => this.replicas.every((r) => r.finished), "every replica stops", 10 * TTL, 1000);
  }

  leaders(): string[] {
    return this.replicas.filter((r) => r.isLeader).map((r) => r.name);
  }
}

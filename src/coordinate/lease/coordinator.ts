// One leader-election loop for every lease backend: campaign, hold (renew), fence, release.
//
// Timing model (all on this replica's own monotonic clock, never on another host's wall clock):
// * A standby takes a lease over once it has watched the same version for a whole ttl, or at once when
//   the lease is released, absent, not a lease document, or carries our own identity.
// * The leader fences itself `fenceAfterMs = ttl - renewInterval/2` after the start of its last
//   successful renewal. A standby first sees that renewal only after it was started, so every replica
//   stops committing at least renewInterval/2 before anyone else can take over, even when partitioned.
import type { Logger } from "../../obs/logger.ts";
import { silentLogger } from "../../obs/logger.ts";
import type { Clock } from "../../util/clock.ts";
import { systemClock } from "../../util/clock.ts";
import { fullJitter, retry } from "../../util/retry.ts";
import type { Coordinator, LeadershipCallbacks, LossReason } from "../coordinator.ts";
import { leadershipFenceError } from "../errors.ts";
import type { LeaseBackend, LeaseRecord, LeaseSnapshot } from "./backend.ts";
import { deadlineSignal, pause, settledOrAborted, withTimeout } from "./waits.ts";

export interface LeaseCoordinatorOptions {
  backend: LeaseBackend;
  identity: string;
  ttlMs: number;
  renewIntervalMs: number;
  clock?: Clock;
  logger?: Logger;
  /**
   * The highest epoch the checkpoint store has persisted (the file store's `__fence_epoch__`), read
   * fresh at every acquisition so a lost lease cannot restart the epoch below it (#99).
   */
  epochFloor?: (signal: AbortSignal) => Promise<number | undefined>;
  /** Bound on one backend call. Default: renewInterval / 2. */
  callTimeoutMs?: number;
  /**
   * Sharding: claim only while this says yes. The campaign keeps reading (and timing) the lease either
   * way, so the moment the gate opens an expired lease is taken at once, without a fresh ttl of watching.
   */
  gate?: () => boolean;
  /** How often a standby re-reads the lease. Default: renewInterval. */
  standbyPollMs?: number;
}

type ClaimOutcome = "won" | "conflict" | "failed" | "stopped";
type RenewOutcome = "renewed" | "lost" | "stopped";

const ABSENT = Symbol("absent");
const UNREADABLE = Symbol("unreadable");
/** For calls a stop must not cut short (their own deadline still bounds them). */
const NOT_STOPPED = new AbortController().signal;

/** The lease now carries another holder or epoch: leadership is gone, retrying cannot help. */
class LeaseLost extends Error {
  readonly by: string | undefined;
  constructor(by: string | undefined) {
    super(`lease taken over by ${by ?? "nobody (it was deleted)"}`);
    this.by = by;
  }
}

export class LeaseCoordinator implements Coordinator {
  readonly #backend: LeaseBackend;
  readonly #identity: string;
  readonly #ttlMs: number;
  readonly #renewMs: number;
  readonly #fenceAfterMs: number;
  readonly #callTimeoutMs: number;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #epochFloor: LeaseCoordinatorOptions["epochFloor"];
  readonly #gate: (() => boolean) | undefined;
  readonly #standbyPollMs: number;

  #running = false;
  #leader = false;
  #holder: string | undefined;
  #epoch = 0;
  #highestEpochSeen = 0;
  /** What we hold, and the CAS token of our last write of it. */
  #held: { record: LeaseRecord; version: string } | undefined;
  #lastRenewStartMono = Number.NEGATIVE_INFINITY;
  #observedVersion: string | symbol = UNREADABLE;
  #observedAtMono = 0;
  /** Aborted when the current term ends by loss, fence or resignation. */
  #term = new AbortController();
  /** Set by resign() for the current term: why it was given up. */
  #resigned: AbortController | undefined;
  /** Set by handOver() for the current term: drain while still leading, then release. */
  #handover: AbortController | undefined;
  /** Set by nudge(): the campaign re-reads now instead of at its next poll. */
  #nudged = false;
  /** Wakes the campaign's current pause, if it is in one. */
  #wake: AbortController | undefined;

  constructor(opts: LeaseCoordinatorOptions) {
    this.#backend = opts.backend;
    this.#identity = opts.identity;
    this.#ttlMs = opts.ttlMs;
    this.#renewMs = opts.renewIntervalMs;
    this.#fenceAfterMs = opts.ttlMs - opts.renewIntervalMs / 2;
    this.#callTimeoutMs = opts.callTimeoutMs ?? opts.renewIntervalMs / 2;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({
      component: "coordinate",
      coordinator: opts.backend.kind,
      lease: opts.backend.where,
      identity: opts.identity,
    });
    this.#epochFloor = opts.epochFloor;
    this.#gate = opts.gate;
    this.#standbyPollMs = opts.standbyPollMs ?? opts.renewIntervalMs;
  }

  /** True while we hold the lease and its last renewal is recent enough to commit under it. */
  get isLeader(): boolean {
    return this.#leader && !this.#renewOverdue();
  }

  get holder(): string | undefined {
    return this.#holder;
  }

  /**
   * One read of the lease without campaigning, for `sf2loki state` to name the live holder (#102).
   * Opens and closes the backend itself; not for use on a coordinator that runs.
   */
  async peek(signal: AbortSignal): Promise<{ where: string; record: LeaseRecord | undefined } | undefined> {
    await this.#backend.open?.(signal);
    try {
      const snap = await this.#backend.read(signal);
      return snap === undefined ? undefined : { where: this.#backend.where, record: snap.record };
    } finally {
      await this.#backend.close?.();
    }
  }

  /** The fence token of the current (or last) term; 0 before the first acquisition. */
  get epoch(): number {
    return this.#epoch;
  }

  get identity(): string {
    return this.#identity;
  }

  get termSignal(): AbortSignal {
    return this.#term.signal;
  }

  resign(reason: string): boolean {
    const resigned = this.#resigned;
    if (!this.#leader || !resigned || resigned.signal.aborted) return false;
    this.#log.warn({ reason, epoch: this.#epoch }, "resigning the lease so another replica can lead");
    this.#endTerm(`resigned: ${reason}`);
    resigned.abort();
    return true;
  }

  /**
   * Sharding's clean hand-over: the term ends like a stop (onLose("stopping") while still leading, so
   * the drain commits), the lease is released at once, and the campaign resumes with no ttl back-off
   * (the gate keeps it from taking the lease straight back). False when nothing is held.
   */
  handOver(reason: string): boolean {
    const handover = this.#handover;
    if (!this.#leader || !handover || handover.signal.aborted) return false;
    this.#log.info({ reason, epoch: this.#epoch }, "handing the lease over: draining, then releasing it");
    handover.abort();
    return true;
  }

  /** A standby re-reads the lease now (its gate just opened), not at its next poll. */
  nudge(): void {
    this.#nudged = true;
    this.#wake?.abort();
  }

  checkFence(): void {
    if (!this.#leader) throw leadershipFenceError(this.#identity, this.#backend.where);
    if (this.#renewOverdue()) {
      const s = Math.round(this.#fenceAfterMs / 100) / 10;
      throw leadershipFenceError(
        this.#identity,
        this.#backend.where,
        `not renewed within ${s}s, leadership lost`,
      );
    }
  }

  async run(callbacks: LeadershipCallbacks): Promise<void> {
    if (this.#running) throw new Error("LeaseCoordinator.run is already running");
    this.#running = true;
    const { signal } = callbacks;
    try {
      await this.#backend.open?.(signal);
      while (!signal.aborted) {
        if (!(await this.#campaign(signal))) break;
        if ((await this.#lead(callbacks)) === "resigned") {
          // Stand aside for a whole ttl, so a healthy standby takes the released lease, not us again.
          if (!(await pause(this.#clock, this.#ttlMs, signal))) break;
        }
      }
    } finally {
      this.#running = false;
      await this.#backend.close?.();
    }
  }

  #renewOverdue(): boolean {
    return this.#clock.monotonic() - this.#lastRenewStartMono >= this.#fenceAfterMs;
  }

  /** Bounded backend call. */
  #call<T>(what: string, signal: AbortSignal, fn: (signal: AbortSignal) => Promise<T>): Promise<T> {
    return withTimeout(
      this.#clock,
      this.#callTimeoutMs,
      signal,
      `${what} of lease ${this.#backend.where}`,
      fn,
    );
  }

  // ---- campaign ----------------------------------------------------------------------------------

  /** Loops until we hold the lease (true) or `signal` aborts (false). */
  async #campaign(signal: AbortSignal): Promise<boolean> {
    while (!signal.aborted) {
      // A nudge that lands during this round's read skips its pause; an older one is spent.
      this.#nudged = false;
      const snap = await this.#readForCampaign(signal);
      let waitMs = this.#standbyPollMs;
      if (snap !== UNREADABLE && this.#claimable(snap) && (this.#gate?.() ?? true)) {
        const outcome = await this.#claim(snap, signal);
        if (outcome === "won") return true;
        if (outcome === "stopped") return false;
        // A lost race is settled by the next read; the short pause only keeps a flapping backend polite.
        if (outcome === "conflict") waitMs = Math.max(this.#backend.confirmDelayMs, this.#renewMs / 10);
      }
      await this.#pauseUnlessNudged(waitMs, signal);
    }
    return false;
  }

  /** The campaign's pause between reads, cut short by a stop or a nudge. */
  async #pauseUnlessNudged(ms: number, signal: AbortSignal): Promise<void> {
    if (this.#nudged) return;
    const wake = new AbortController();
    const onStop = (): void => {
      wake.abort();
    };
    signal.addEventListener("abort", onStop, { once: true });
    this.#wake = wake;
    try {
      await pause(this.#clock, ms, signal.aborted ? signal : wake.signal);
    } finally {
      this.#wake = undefined;
      signal.removeEventListener("abort", onStop);
    }
  }

  async #readForCampaign(signal: AbortSignal): Promise<LeaseSnapshot | undefined | typeof UNREADABLE> {
    try {
      const snap = await this.#call("read", signal, (s) => this.#backend.read(s));
      this.#observe(snap);
      return snap;
    } catch (err) {
      if (!signal.aborted)
        this.#log.warn({ err }, "cannot read the lease; backing off without contesting it");
      return UNREADABLE;
    }
  }

  #observe(snap: LeaseSnapshot | undefined): void {
    const version = snap?.version ?? ABSENT;
    if (version !== this.#observedVersion) {
      this.#observedVersion = version;
      this.#observedAtMono = this.#clock.monotonic();
    }
    const record = snap?.record;
    this.#holder = record?.holder ? record.holder : undefined;
    if (record) this.#highestEpochSeen = Math.max(this.#highestEpochSeen, record.epoch);
    if (snap && !record) {
      this.#log.warn(
        { problem: snap.problem },
        "the lease holds no valid lease document; treating it as absent",
      );
    }
  }

  #claimable(snap: LeaseSnapshot | undefined): boolean {
    const record = snap?.record;
    if (!record) return true;
    // Our own identity on a live lease is a restart of this replica: take it back at once (new epoch).
    if (record.holder === "" || record.holder === this.#identity) return true;
    // A lease that never states its duration or renewal cannot be judged live (#62).
    if (record.ttlMs === undefined || record.renewedAtMs === undefined) return true;
    return this.#clock.monotonic() - this.#observedAtMono >= record.ttlMs;
  }

  async #claim(snap: LeaseSnapshot | undefined, signal: AbortSignal): Promise<ClaimOutcome> {
    const epoch = await this.#nextEpoch(snap?.record, signal);
    await this.#rememberEpoch(epoch, signal);
    const now = this.#clock.now();
    const record: LeaseRecord = {
      holder: this.#identity,
      epoch,
      ttlMs: this.#ttlMs,
      renewedAtMs: now,
      acquiredAtMs: now,
    };
    const startedMono = this.#clock.monotonic();
    let version: string;
    try {
      // Not cut short by a stop: a claim on the wire may land whatever we do, so its (bounded) answer is
      // awaited and a claim that won is released below, rather than left holding the lease for a ttl.
      const result = await this.#call("claim", NOT_STOPPED, (s) =>
        this.#backend.write(record, snap?.version, s),
      );
      if (!result.ok) {
        this.#log.info("lost the lease race; another replica claimed it first");
        return "conflict";
      }
      version = result.version;
      if (signal.aborted || !(await this.#confirmed(version, signal))) {
        if (signal.aborted) return await this.#releaseStoppedClaim(record, version);
        this.#log.info("lost the lease race; another replica's claim landed after ours");
        return "conflict";
      }
    } catch (err) {
      if (signal.aborted) return await this.#releaseStoppedClaim(record, undefined);
      this.#log.warn({ err }, "could not write the lease; retrying after the renew interval");
      return "failed";
    }
    this.#held = { record, version };
    this.#epoch = epoch;
    this.#highestEpochSeen = Math.max(this.#highestEpochSeen, epoch);
    this.#lastRenewStartMono = startedMono;
    this.#holder = this.#identity;
    this.#leader = true;
    this.#log.info({ holder: this.#identity, epoch }, "acquired lease");
    return "won";
  }

  /**
   * The stop came while our claim was out: if the lease names us in this claim's epoch (`version` is
   * the claim's answer; undefined when its outcome is unknown, so the lease is read), release it now,
   * so a standby, or a sharded peer, takes it at once instead of waiting out the ttl of a replica that
   * has gone.
   */
  async #releaseStoppedClaim(record: LeaseRecord, version: string | undefined): Promise<"stopped"> {
    let current = version;
    if (current === undefined) {
      try {
        const snap = await this.#call("stopped claim re-read", NOT_STOPPED, (s) => this.#backend.read(s));
        if (snap?.record?.holder !== this.#identity || snap.record.epoch !== record.epoch) return "stopped";
        current = snap.version;
      } catch (err) {
        this.#log.warn({ err }, "a claim cut short by the stop may hold the lease until its ttl ends");
        return "stopped";
      }
    }
    this.#held = { record, version: current };
    this.#epoch = record.epoch;
    await this.#release();
    return "stopped";
  }

  /** max(lease epoch, every floor we know) + 1: a lost or reset lease never restarts the epoch (#99). */
  async #nextEpoch(record: LeaseRecord | undefined, signal: AbortSignal): Promise<number> {
    const leaseEpoch = record?.epoch ?? 0;
    let floor = this.#highestEpochSeen;
    const sources: [string, ((s: AbortSignal) => Promise<number | undefined>) | undefined][] = [
      ["lease epoch sidecar", this.#backend.readEpochFloor?.bind(this.#backend)],
      ["persisted checkpoint epoch", this.#epochFloor],
    ];
    for (const [name, read] of sources) {
      if (!read) continue;
      try {
        floor = Math.max(floor, (await this.#call(`read ${name}`, signal, read)) ?? 0);
      } catch (err) {
        if (signal.aborted) return leaseEpoch + 1;
        this.#log.warn({ err, source: name }, "cannot read an epoch floor; electing without it");
      }
    }
    if (floor > leaseEpoch) {
      this.#log.warn(
        { leaseEpoch, floor },
        "the lease's epoch is below one already used (the lease was lost or reset); continuing above it",
      );
    }
    return Math.max(leaseEpoch, floor) + 1;
  }

  async #rememberEpoch(epoch: number, signal: AbortSignal): Promise<void> {
    const record = this.#backend.recordEpoch?.bind(this.#backend);
    if (!record) return;
    try {
      await this.#call("record epoch", signal, (s) => record(epoch, s));
    } catch (err) {
      if (!signal.aborted) this.#log.warn({ err, epoch }, "cannot record the lease epoch outside the lease");
    }
  }

  /** For backends without a real CAS: wait, then check that our write is still the one stored. */
  async #confirmed(version: string, signal: AbortSignal): Promise<boolean> {
    if (this.#backend.confirmDelayMs <= 0) return true;
    if (!(await pause(this.#clock, this.#backend.confirmDelayMs, signal))) return false;
    const snap = await this.#call("confirm", signal, (s) => this.#backend.read(s));
    return snap?.version === version;
  }

  // ---- leading -------------------------------------------------------------------------------------

  /**
   * One term. Renewal runs alongside the callbacks from the moment we win. On a loss (or a resignation),
   * isLeader turns false and the term signal aborts before onLose("lost"); on a stop we keep renewing
   * (and stay leader) until onLose("stopping") has drained, so the last checkpoints still commit, and
   * then release the lease so a standby takes over at once. A resigned lease is released too.
   */
  async #lead(callbacks: LeadershipCallbacks): Promise<"ended" | "resigned"> {
    const hold = new AbortController();
    const resigned = new AbortController();
    const handover = new AbortController();
    this.#term = new AbortController();
    this.#resigned = resigned;
    this.#handover = handover;
    const holding = this.#hold(hold.signal);
    try {
      await callbacks.onAcquire();
      await settledOrAborted(holding, AbortSignal.any([callbacks.signal, resigned.signal, handover.signal]));
    } finally {
      const why: LossReason = this.#leader ? "stopping" : "lost";
      try {
        await callbacks.onLose(why);
      } finally {
        hold.abort();
        await holding;
        const stillHeld = this.#leader || resigned.signal.aborted;
        this.#endTerm("term over");
        if (stillHeld) await this.#release();
      }
    }
    return resigned.signal.aborted ? "resigned" : "ended";
  }

  async #hold(term: AbortSignal): Promise<void> {
    // Renewals start every renew interval from the last one's start, not an interval after it ended:
    // the fence counts from the start, so a slow store call (a loaded host, a far bucket) must not push
    // the next renewal later and eat the margin twice.
    const untilDue = (): number =>
      Math.max(0, this.#lastRenewStartMono + this.#renewMs - this.#clock.monotonic());
    while (await pause(this.#clock, untilDue(), term)) {
      const outcome = await this.#renew(term);
      if (outcome === "stopped") return;
      if (outcome === "lost") {
        this.#endTerm("leadership lost");
        return;
      }
    }
  }

  /** Not the leader from now on, and every write still in flight under this term is aborted. */
  #endTerm(why: string): void {
    this.#leader = false;
    if (!this.#term.signal.aborted) {
      this.#term.abort(leadershipFenceError(this.#identity, this.#backend.where, why));
    }
  }

  /** Renews with retries until it succeeds, the lease is taken, or the fence deadline passes. */
  async #renew(term: AbortSignal): Promise<RenewOutcome> {
    const remaining = this.#lastRenewStartMono + this.#fenceAfterMs - this.#clock.monotonic();
    const deadline = deadlineSignal(this.#clock, remaining, term, () => new Error("fence deadline"));
    try {
      await retry(() => this.#renewAttempt(deadline.signal), {
        policy: {
          maxAttempts: Number.MAX_SAFE_INTEGER,
          backoffMs: fullJitter(this.#renewMs / 10, this.#renewMs / 2),
        },
        clock: this.#clock,
        isTransient: (err) => !(err instanceof LeaseLost),
        signal: deadline.signal,
        onRetry: (err, attempt) => {
          this.#log.warn({ err, attempt }, "lease renewal failed; retrying before the fence deadline");
        },
      });
      return "renewed";
    } catch (err) {
      if (term.aborted) return "stopped";
      if (err instanceof LeaseLost) {
        this.#holder = err.by;
        this.#log.warn({ holder: err.by }, "lease taken over by another replica; standing by");
      } else {
        this.#log.warn(
          { err, fenceAfterMs: this.#fenceAfterMs },
          "lease not renewed in time; fencing this replica and standing by",
        );
      }
      return "lost";
    } finally {
      deadline.dispose();
    }
  }

  async #renewAttempt(signal: AbortSignal): Promise<void> {
    const held = this.#held!;
    const record: LeaseRecord = { ...held.record, renewedAtMs: this.#clock.now() };
    const startedMono = this.#clock.monotonic();
    const result = await this.#call("renew", signal, (s) => this.#backend.write(record, held.version, s));
    if (result.ok) {
      if (!(await this.#confirmed(result.version, signal))) {
        throw new Error("our renewal was not the write stored afterwards");
      }
      this.#held = { record, version: result.version };
      this.#lastRenewStartMono = startedMono;
      return;
    }
    // The version moved. If the stored lease is still ours (same holder, same epoch), an earlier write of
    // ours landed without its answer reaching us: adopt its version and try again. Anything else is a loss.
    const snap = await this.#call("read", signal, (s) => this.#backend.read(s));
    this.#observe(snap);
    const stored = snap?.record;
    if (snap && stored?.holder === this.#identity && stored.epoch === this.#epoch) {
      this.#held = { record: held.record, version: snap.version };
      throw new Error("lease version moved under our own identity; adopting it");
    }
    throw new LeaseLost(stored?.holder || undefined);
  }

  /** Writes the lease as unheld (epoch kept) so a standby takes over without waiting a ttl. */
  async #release(): Promise<void> {
    const held = this.#held;
    if (!held) return;
    const record: LeaseRecord = { ...held.record, holder: "", renewedAtMs: this.#clock.now() };
    try {
      let result = await this.#call("release", new AbortController().signal, (s) =>
        this.#backend.write(record, held.version, s),
      );
      if (!result.ok) {
        // A renewal aborted by the stop may still have landed, moving the version under us. If the
        // lease is still ours in this term, release against the version just read (once).
        const snap = await this.#call("release re-read", new AbortController().signal, (s) =>
          this.#backend.read(s),
        );
        if (snap?.record?.holder === this.#identity && snap.record.epoch === this.#epoch) {
          result = await this.#call("release", new AbortController().signal, (s) =>
            this.#backend.write(record, snap.version, s),
          );
        }
      }
      if (result.ok) {
        this.#holder = undefined;
        this.#log.info({ holder: this.#identity, epoch: this.#epoch }, "released lease");
      } else {
        this.#log.warn("lease changed hands before it could be released");
      }
    } catch (err) {
      this.#log.warn({ err }, "could not release the lease; a standby takes over once it expires");
    }
    this.#held = undefined;
  }
}

// The whole-document checkpoint store over one S3 or GCS object, written once for both backends.
//
// Every write is a conditional PUT of the full document guarded by the CAS token of the version this
// process last read. The reads, the retries and the verify-before-conflict rule of #129 live in
// conditional-object.ts (the object lease uses the same code); this class keeps the document, the
// token and the mapping of each outcome to the store's own errors.
import { Sf2LokiError } from "../errors.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { Mutex } from "../util/mutex.ts";
import { unreachable } from "../util/proxy-fault.ts";
import type { RetryPolicy } from "../util/retry.ts";
import {
  OBJECT_STORE_RETRY,
  getObject,
  putObjectConditionally,
  type ObjectCallOptions,
  type PutOutcome,
} from "./conditional-object.ts";
import {
  lookup,
  parseDocument,
  serialiseDocument,
  withoutKey,
  reservedOf,
  withoutReserved,
  type CheckpointDocument,
} from "./document.ts";
import { stateErrors, StateFenceError, StateStoreConflictError, type ObjectStoreHints } from "./errors.ts";
import { stamped, storedEpoch, writeSignal, type WriteFence } from "./fence.ts";
import type { ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";
import type { CheckpointStore } from "./store.ts";

/** Rounds of read-then-write a term claim gets when a write of the outgoing leader slips in between. */
const CLAIM_ROUNDS = 5;

export { OBJECT_STORE_RETRY };

export interface ObjectStoreOptions {
  clock?: Clock;
  logger?: Logger;
  retryPolicy?: RetryPolicy;
}

export class ObjectCheckpointStore implements CheckpointStore {
  readonly #backend: ObjectBackend;
  readonly #log: Logger;
  readonly #calls: ObjectCallOptions;
  readonly #mutex = new Mutex();
  #doc: CheckpointDocument | undefined;
  #token: string | undefined;
  #fence: WriteFence | undefined;
  #lifetime = new AbortController();
  /** Bumped by reset(), so a write that finishes after a reset does not reinstall a stale cache. */
  #resets = 0;

  constructor(backend: ObjectBackend, opts: ObjectStoreOptions = {}) {
    this.#backend = backend;
    this.#log = (opts.logger ?? silentLogger).child({ component: "state", location: backend.hints.location });
    this.#calls = {
      clock: opts.clock ?? systemClock,
      policy: opts.retryPolicy ?? OBJECT_STORE_RETRY,
      log: this.#log,
      what: "write",
    };
  }

  get location(): string {
    return this.#backend.hints.location;
  }

  async load(key: string): Promise<string | undefined> {
    return this.#mutex.run(async () => lookup(await this.#loaded(), key));
  }

  async commit(key: string, value: string): Promise<void> {
    await this.commitMany({ [key]: value });
  }

  async commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#fence?.check(); // and again before every attempt
      const doc = await this.#loaded();
      await this.#write({ ...doc, ...items }, "commit");
    });
  }

  async replace(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#fence?.check(); // and again before every attempt
      const doc = await this.#loaded();
      await this.#write({ ...reservedOf(doc), ...withoutReserved(items) }, "replace");
    });
  }

  async delete(key: string): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#fence?.check(); // and again before every attempt
      const doc = await this.#loaded();
      if (lookup(doc, key) === undefined) return;
      await this.#write(withoutKey(doc, key), `delete of ${JSON.stringify(key)}`);
    });
  }

  async snapshot(): Promise<Record<string, string>> {
    return this.#mutex.run(async () => {
      this.reset();
      return withoutReserved(await this.#loaded());
    });
  }

  reset(): void {
    this.#doc = undefined;
    this.#token = undefined;
    this.#resets++;
  }

  setFence(fence: WriteFence | undefined): void {
    this.#fence = fence;
  }

  async claimTerm(): Promise<void> {
    if (this.#fence?.epoch() === undefined) return;
    await this.#mutex.run(async () => {
      for (let round = 1; ; round++) {
        // Fresh, never the cache: the outgoing leader may have committed since this replica last read.
        this.reset();
        const doc = await this.#loaded();
        try {
          await this.#write(doc, "term claim");
          return;
        } catch (err) {
          // The outgoing leader's last write landed between our read and our write; read again.
          if (!(err instanceof StateStoreConflictError) || round >= CLAIM_ROUNDS) throw err;
        }
      }
    });
  }

  async readFenceEpoch(): Promise<number | undefined> {
    // One fresh GET that leaves the cache and its CAS token alone.
    const stored = await this.#get();
    return stored ? storedEpoch(this.#parse(stored), this.#log) : undefined;
  }

  async close(): Promise<void> {
    this.#lifetime.abort(new Sf2LokiError("SF2LOKI_STATE_CLOSED", `state store ${this.location} was closed`));
    this.#lifetime = new AbortController();
    await this.#backend.close();
  }

  async #loaded(): Promise<CheckpointDocument> {
    if (this.#doc) return this.#doc;
    const resets = this.#resets;
    const stored = await this.#get();
    const doc = stored ? this.#parse(stored) : {};
    if (resets === this.#resets) {
      this.#doc = doc;
      this.#token = stored?.token;
    }
    return doc;
  }

  #parse(stored: StoredObject): CheckpointDocument {
    const parsed = parseDocument(stored.bytes);
    if (!parsed.ok) throw stateErrors.objectCorrupt(this.#backend.hints, parsed.problem, parsed.cause);
    return parsed.doc;
  }

  /** One whole-object GET (body included) per attempt, so bytes and token always come from one response. */
  async #get(): Promise<StoredObject | undefined> {
    try {
      return await getObject(this.#backend, this.#calls, this.#lifetime.signal);
    } catch (err) {
      throw this.#translate(err, "read");
    }
  }

  async #write(next: CheckpointDocument, op: string): Promise<void> {
    const fence = this.#fence;
    const epoch = fence?.epoch();
    const stored = epoch === undefined ? undefined : storedEpoch(next, this.#log);
    if (epoch !== undefined && stored !== undefined && stored > epoch) {
      throw stateErrors.staleEpoch(this.location, op, epoch, stored);
    }
    const doc = stamped(next, epoch);
    const precondition: Precondition =
      this.#token === undefined ? { kind: "create" } : { kind: "match", token: this.#token };
    const resets = this.#resets;
    let token: string | undefined;
    try {
      token = await this.#conditionalPut(serialiseDocument(doc), precondition, op, fence);
    } catch (err) {
      throw fence && err instanceof StateStoreConflictError
        ? await this.#explainUnderHa(err, op, fence)
        : err;
    }
    if (resets !== this.#resets) return;
    // Without a token we cannot guard the next write, so make it start from a fresh read instead.
    this.#doc = token === undefined ? undefined : doc;
    this.#token = token;
  }

  async #conditionalPut(
    bytes: Uint8Array,
    precondition: Precondition,
    op: string,
    fence: WriteFence | undefined,
  ): Promise<string | undefined> {
    const hints = this.#backend.hints;
    const calls: ObjectCallOptions = {
      ...this.#calls,
      log: this.#log.child({ op }),
      ...(fence ? { beforeAttempt: () => fence.check() } : {}),
    };
    let outcome: PutOutcome;
    try {
      outcome = await putObjectConditionally(
        this.#backend,
        bytes,
        precondition,
        calls,
        writeSignal(this.#lifetime.signal, fence),
      );
    } catch (err) {
      if (err instanceof StateFenceError) throw err;
      if (fence?.signal()?.aborted) throw stateErrors.termEnded(hints.location, op, err);
      if (!(err instanceof Sf2LokiError) && this.#backend.classify(err) === "concurrent-conflict") {
        throw stateErrors.busy(hints, op, this.#calls.policy.maxAttempts, err);
      }
      throw this.#translate(err, op);
    }
    switch (outcome.kind) {
      case "written":
        return outcome.token;
      case "unverified":
        throw stateErrors.unverifiedAfterLostAck(hints, op, outcome.cause);
      case "conflict":
        throw conflictError(outcome, hints, op);
    }
  }

  /**
   * Under HA a conflict is most often the next leader's term claim, not a second instance: if this
   * replica was fenced meanwhile, or the document now carries a newer epoch, say that (the app stands by
   * on StateFenceError); only otherwise is it the conflict it looked like.
   */
  async #explainUnderHa(conflict: StateStoreConflictError, op: string, fence: WriteFence): Promise<Error> {
    try {
      await fence.check();
    } catch (fenced) {
      if (fenced instanceof StateFenceError) return fenced;
    }
    const mine = fence.epoch();
    let stored: number | undefined;
    try {
      stored = await this.readFenceEpoch();
    } catch {
      return conflict;
    }
    if (mine !== undefined && stored !== undefined && stored > mine) {
      return stateErrors.staleEpoch(this.location, op, mine, stored);
    }
    return conflict;
  }

  /** Access denial and a missing bucket get rewritten; every other failure surfaces as the original error. */
  #translate(err: unknown, op: string): unknown {
    if (err instanceof Sf2LokiError) return err;
    const verdict = this.#backend.classify(err);
    if (verdict === "access-denied") return stateErrors.accessDenied(this.#backend.hints, op, err);
    if (verdict === "missing-scope") return stateErrors.missingScope(this.#backend.hints, op, err);
    const { endpoint } = this.#backend.hints;
    if (verdict === "transient" && endpoint !== undefined) {
      const { text, hint, proxied } = unreachable(err, endpoint);
      if (proxied) return stateErrors.proxyDown(this.#backend.hints, op, text, hint, err);
    }
    return err;
  }
}

/** The store's error for each kind of conflict the shared conditional write reports. */
function conflictError(
  outcome: Extract<PutOutcome, { kind: "conflict" }>,
  hints: ObjectStoreHints,
  op: string,
): StateStoreConflictError {
  switch (outcome.found) {
    case "race":
      return stateErrors.casLost(hints, op, outcome.cause);
    case "other-bytes":
      return stateErrors.overwrittenAfterLostAck(hints, op, outcome.cause);
    case "absent":
      return stateErrors.deletedAfterLostAck(hints, op, outcome.cause);
  }
}

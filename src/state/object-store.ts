// The whole-document checkpoint store over one S3 or GCS object, written once for both backends.
//
// Every write is a conditional PUT of the full document guarded by the CAS token of the version this
// process last read, retried through one attempt-aware loop. The attempt number matters: a 412 on the
// first attempt is a genuine lost race, but a 412 on a retry may be our own earlier attempt that landed
// while its acknowledgement was lost (defect #129), so there we read the object back and compare bytes
// before calling it a conflict.
import { Sf2LokiError } from "../errors.ts";
import { silentLogger, type Logger } from "../obs/logger.ts";
import { systemClock, type Clock } from "../util/clock.ts";
import { Mutex } from "../util/mutex.ts";
import { retry, type RetryPolicy } from "../util/retry.ts";
import {
  lookup,
  parseDocument,
  serialiseDocument,
  withoutKey,
  reservedOf,
  withoutReserved,
  type CheckpointDocument,
} from "./document.ts";
import { stateErrors } from "./errors.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";
import type { CheckpointStore, Fence } from "./store.ts";

/** At most 4 attempts; the wait after attempt n is uniform in [0.1 s, min(2 s, 2^(n-1) s)] (spec C §1.7). */
export const OBJECT_STORE_RETRY: RetryPolicy = {
  maxAttempts: 4,
  backoffMs: (attempt, random) => {
    const ceiling = Math.min(2000, 1000 * 2 ** (attempt - 1));
    return 100 + random() * (ceiling - 100);
  },
};

export interface ObjectStoreOptions {
  clock?: Clock;
  logger?: Logger;
  retryPolicy?: RetryPolicy;
}

export class ObjectCheckpointStore implements CheckpointStore {
  readonly #backend: ObjectBackend;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #policy: RetryPolicy;
  readonly #mutex = new Mutex();
  #doc: CheckpointDocument | undefined;
  #token: string | undefined;
  #fence: Fence | undefined;
  #lifetime = new AbortController();
  /** Bumped by reset(), so a write that finishes after a reset does not reinstall a stale cache. */
  #resets = 0;

  constructor(backend: ObjectBackend, opts: ObjectStoreOptions = {}) {
    this.#backend = backend;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "state", location: backend.hints.location });
    this.#policy = opts.retryPolicy ?? OBJECT_STORE_RETRY;
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
      await this.#fence?.();
      const doc = await this.#loaded();
      await this.#write({ ...doc, ...items }, "commit");
    });
  }

  async replace(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#fence?.();
      const doc = await this.#loaded();
      await this.#write({ ...reservedOf(doc), ...withoutReserved(items) }, "replace");
    });
  }

  async delete(key: string): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#fence?.();
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

  setFence(fence: Fence | undefined): void {
    this.#fence = fence;
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
      return await this.#retry((signal) => this.#backend.get(signal));
    } catch (err) {
      throw this.#translate(err, "read");
    }
  }

  async #write(next: CheckpointDocument, op: string): Promise<void> {
    const bytes = serialiseDocument(next);
    const precondition: Precondition =
      this.#token === undefined ? { kind: "create" } : { kind: "match", token: this.#token };
    const resets = this.#resets;
    const token = await this.#conditionalPut(bytes, precondition, op);
    if (resets !== this.#resets) return;
    // Without a token we cannot guard the next write, so make it start from a fresh read instead.
    this.#doc = token === undefined ? undefined : next;
    this.#token = token;
  }

  async #conditionalPut(
    bytes: Uint8Array,
    precondition: Precondition,
    op: string,
  ): Promise<string | undefined> {
    const hints = this.#backend.hints;
    try {
      return await this.#retry(async (signal, attempt) => {
        try {
          return await this.#backend.put(bytes, precondition, signal);
        } catch (err) {
          const kind = this.#backend.classify(err);
          if (kind === "precondition-failed") {
            if (attempt === 1) throw stateErrors.casLost(hints, op, err);
            return await this.#adoptOwnWrite(bytes, op, err);
          }
          if (kind === "concurrent-conflict" && attempt > 1) {
            // Our own earlier attempt may be the write S3 says is still in progress, or already done.
            const own = await this.#probeOwnWrite(bytes).catch(() => undefined);
            if (own) return this.#recovered(own, op, attempt);
          }
          throw err;
        }
      });
    } catch (err) {
      if (!(err instanceof Sf2LokiError) && this.#backend.classify(err) === "concurrent-conflict") {
        throw stateErrors.busy(hints, op, this.#policy.maxAttempts, err);
      }
      throw this.#translate(err, op);
    }
  }

  /** A 412 on a retry: success if the stored bytes are exactly what this call wrote, else a conflict. */
  async #adoptOwnWrite(bytes: Uint8Array, op: string, preconditionErr: unknown): Promise<string> {
    const hints = this.#backend.hints;
    let current: StoredObject | undefined;
    try {
      current = await this.#retry((signal) => this.#backend.get(signal));
    } catch (probeErr) {
      throw stateErrors.unverifiedAfterLostAck(hints, op, probeErr);
    }
    if (!current) throw stateErrors.deletedAfterLostAck(hints, op, preconditionErr);
    if (!sameBytes(current.bytes, bytes))
      throw stateErrors.overwrittenAfterLostAck(hints, op, preconditionErr);
    return this.#recovered(current.token, op, undefined);
  }

  async #probeOwnWrite(bytes: Uint8Array): Promise<string | undefined> {
    const current = await this.#retry((signal) => this.#backend.get(signal));
    return current && sameBytes(current.bytes, bytes) ? current.token : undefined;
  }

  #recovered(token: string, op: string, attempt: number | undefined): string {
    this.#log.warn(
      { op, attempt, token },
      "recovered an applied-but-unacknowledged write: an earlier attempt landed although its response was lost; " +
        "adopting the stored version (no second writer involved)",
    );
    return token;
  }

  #retry<T>(fn: (signal: AbortSignal, attempt: number) => Promise<T>): Promise<T> {
    const signal = this.#lifetime.signal;
    return retry(({ attempt }) => fn(signal, attempt), {
      policy: this.#policy,
      clock: this.#clock,
      signal,
      isTransient: (err) => !(err instanceof Sf2LokiError) && isRetryable(this.#backend.classify(err)),
      onRetry: (err, attempt, delayMs) => {
        this.#log.warn(
          { attempt, delayMs: Math.round(delayMs), err: err instanceof Error ? err.message : String(err) },
          "transient object-store error; retrying",
        );
      },
    });
  }

  /** Only access denial gets rewritten; every other failure surfaces as the original error. */
  #translate(err: unknown, op: string): unknown {
    if (err instanceof Sf2LokiError) return err;
    if (this.#backend.classify(err) === "access-denied")
      return stateErrors.accessDenied(this.#backend.hints, op, err);
    return err;
  }
}

function isRetryable(kind: ErrorClass): boolean {
  return kind === "transient" || kind === "concurrent-conflict";
}

function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  return Buffer.compare(a, b) === 0;
}

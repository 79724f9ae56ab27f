// The lease as one object in an S3 or GCS bucket (or an Azure container), written through the checkpoint
// stores' own adapters with their conditional writes: If-Match / If-None-Match: * on S3 and Azure,
// ifGenerationMatch (0 to create) on GCS. That is a real compare-and-swap, so a 412 is the race signal and no confirm read is needed.
// Next to it, `<object>.epoch` remembers the highest epoch ever claimed, so deleting the lease object
// cannot restart the fence token (#99).
import { silentLogger, type Logger } from "../../obs/logger.ts";
import {
  OBJECT_STORE_RETRY,
  getObject,
  putObjectConditionally,
  type ObjectCallOptions,
} from "../../state/conditional-object.ts";
import type { ObjectBackend, Precondition } from "../../state/object-backend.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import type { RetryPolicy } from "../../util/retry.ts";
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseBackend, LeaseRecord, LeaseSnapshot, LeaseWriteResult } from "../lease/backend.ts";
import { decodeLease, encodeLease } from "./document.ts";
import { LeaseWriteError, objectErrorDetail } from "./errors.ts";

export interface ObjectLeaseBackendOptions {
  kind: "s3_lease" | "gcs_lease" | "azure_lease";
  /** The lease object. */
  lease: ObjectBackend;
  /** `<lease>.epoch`, in the same bucket. */
  sidecar: ObjectBackend;
  /** Written into the lease for the standbys to judge it by. */
  ttlMs: number;
  clock?: Clock;
  logger?: Logger;
  /** Transient-error retries inside one lease call; the coordinator bounds the call as a whole. */
  retryPolicy?: RetryPolicy;
}

/** Rounds of read-compare-write on the sidecar before giving up (it is best effort). */
const SIDECAR_ROUNDS = 3;

export class ObjectLeaseBackend implements LeaseBackend {
  readonly kind: "s3_lease" | "gcs_lease" | "azure_lease";
  readonly where: string;
  readonly confirmDelayMs = 0;
  readonly #lease: ObjectBackend;
  readonly #sidecar: ObjectBackend;
  readonly #ttlMs: number;
  readonly #calls: ObjectCallOptions;

  constructor(opts: ObjectLeaseBackendOptions) {
    this.kind = opts.kind;
    this.where = opts.lease.hints.location;
    this.#lease = opts.lease;
    this.#sidecar = opts.sidecar;
    this.#ttlMs = opts.ttlMs;
    this.#calls = {
      clock: opts.clock ?? systemClock,
      policy: opts.retryPolicy ?? OBJECT_STORE_RETRY,
      log: (opts.logger ?? silentLogger).child({ component: "coordinate", lease: this.where }),
      what: "lease write",
    };
  }

  async close(): Promise<void> {
    await Promise.all([this.#lease.close(), this.#sidecar.close()]);
  }

  async read(signal: AbortSignal): Promise<LeaseSnapshot | undefined> {
    const stored = await this.#get(this.#lease, signal);
    if (!stored) return undefined;
    const decoded = decodeLease(stored.bytes);
    return "record" in decoded
      ? { record: decoded.record, version: stored.token }
      : { record: undefined, version: stored.token, problem: decoded.problem };
  }

  async write(
    record: LeaseRecord,
    expected: string | undefined,
    signal: AbortSignal,
  ): Promise<LeaseWriteResult> {
    const bytes = encodeLease(record, this.#ttlMs);
    const precondition: Precondition =
      expected === undefined ? { kind: "create" } : { kind: "match", token: expected };
    const outcome = await this.#put(this.#lease, bytes, precondition, signal);
    if (outcome.kind === "conflict") return { ok: false };
    if (outcome.token !== undefined) return { ok: true, version: outcome.token };
    // Written, but no version came back: learn it from a read. Someone else's bytes there mean our
    // write was already overwritten, which the coordinator handles exactly like a lost race.
    const stored = await this.#get(this.#lease, signal);
    return stored && Buffer.compare(stored.bytes, bytes) === 0
      ? { ok: true, version: stored.token }
      : { ok: false };
  }

  async readEpochFloor(signal: AbortSignal): Promise<number | undefined> {
    return (await this.#readSidecar(signal))?.epoch;
  }

  async recordEpoch(epoch: number, signal: AbortSignal): Promise<void> {
    for (let round = 0; round < SIDECAR_ROUNDS; round++) {
      const current = await this.#readSidecar(signal);
      if (current && current.epoch >= epoch) return;
      const precondition: Precondition = current
        ? { kind: "match", token: current.token }
        : { kind: "create" };
      const outcome = await this.#put(this.#sidecar, Buffer.from(`${epoch}\n`), precondition, signal);
      if (outcome.kind === "written") return;
    }
    throw new Error(
      `the epoch sidecar ${this.#sidecar.hints.location} kept changing under ${SIDECAR_ROUNDS} writes`,
    );
  }

  async #readSidecar(signal: AbortSignal): Promise<{ epoch: number; token: string } | undefined> {
    const stored = await this.#get(this.#sidecar, signal);
    if (!stored) return undefined;
    const text = Buffer.from(stored.bytes).toString("utf8").trim();
    if (!/^\d{1,15}$/.test(text)) {
      throw new LeaseUnreadableError(
        this.#sidecar.hints.location,
        "the epoch sidecar does not hold an integer",
      );
    }
    return { epoch: Number(text), token: stored.token };
  }

  /** Any failure to read means "cannot tell", never "absent": a replica never contests it (#50). */
  async #get(backend: ObjectBackend, signal: AbortSignal) {
    try {
      return await getObject(backend, this.#calls, signal);
    } catch (err) {
      if (signal.aborted) throw err;
      const detail = objectErrorDetail(backend.hints, backend.classify(err), err);
      throw new LeaseUnreadableError(backend.hints.location, detail, { cause: err });
    }
  }

  /** Resolves to whether the write landed and its version; a conflict of any kind is a lost race. */
  async #put(backend: ObjectBackend, bytes: Uint8Array, precondition: Precondition, signal: AbortSignal) {
    try {
      const outcome = await putObjectConditionally(backend, bytes, precondition, this.#calls, signal);
      // After a lost acknowledgement a failed read-back leaves the outcome unknown, not a conflict.
      if (outcome.kind === "unverified") throw outcome.cause;
      return outcome;
    } catch (err) {
      if (signal.aborted) throw err;
      const what = precondition.kind === "create" ? "create" : "conditional write";
      throw new LeaseWriteError(what, backend.hints, backend.classify(err), err);
    }
  }
}

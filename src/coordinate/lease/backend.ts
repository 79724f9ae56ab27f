// The storage half of a lease: one record behind a compare-and-swap. The campaign, renew, fence and
// release logic lives once in LeaseCoordinator; a file, a Kubernetes Lease or an object in a bucket
// only has to read the record and swap it conditionally.

/** What every backend stores, in its own encoding. */
export interface LeaseRecord {
  /** The leader's identity; "" when nobody holds the lease (never acquired, or released). */
  holder: string;
  /** Fence token: +1 on every acquisition, unchanged by renewals and releases. */
  epoch: number;
  /** How long the lease stays valid after its last change, as its writer meant it; undefined if unknown. */
  ttlMs: number | undefined;
  /** Wall-clock ms of the last renewal, for humans; staleness never compares it across hosts. */
  renewedAtMs: number | undefined;
  /** Wall-clock ms of the acquisition, for humans. */
  acquiredAtMs: number | undefined;
}

/** One read of the lease. `undefined` as a whole means the lease does not exist. */
export interface LeaseSnapshot {
  /** undefined: the stored bytes are not a lease document (claimable, like an absent lease). */
  record: LeaseRecord | undefined;
  /** The CAS token: changes on every write (resourceVersion, ETag, generation, content hash). */
  version: string;
  /** Why `record` is undefined, for a WARN line. */
  problem?: string;
}

export type LeaseWriteResult = { ok: true; version: string } | { ok: false };

export interface LeaseBackend {
  /** `file_lease`, `k8s_lease`, ...: for logs. */
  readonly kind: string;
  /** Where the lease lives, for messages: a path, `namespace/name`, a bucket URI. */
  readonly where: string;
  /**
   * How long to wait before re-reading a successful write to confirm it. 0 for a backend whose
   * writes are a real compare-and-swap; a file on shared storage has none, so the last rename wins
   * and only a later read tells who that was.
   */
  readonly confirmDelayMs: number;
  /** Opens clients; called once at the top of `run`. */
  open?(signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
  /** Absent lease: undefined. Any failure to tell: throw (LeaseUnreadableError). */
  read(signal: AbortSignal): Promise<LeaseSnapshot | undefined>;
  /**
   * Writes `record` only if the stored version is still `expected` (undefined: the lease must not
   * exist). `{ok: false}` when it changed or vanished. Throws when the outcome is unknown.
   */
  write(record: LeaseRecord, expected: string | undefined, signal: AbortSignal): Promise<LeaseWriteResult>;
  /** The highest epoch this backend remembers outside the lease itself (a sidecar), if any. */
  readEpochFloor?(signal: AbortSignal): Promise<number | undefined>;
  /** Remembers `epoch` outside the lease, so a lost lease cannot reset it (#99). Best effort. */
  recordEpoch?(epoch: number, signal: AbortSignal): Promise<void>;
}

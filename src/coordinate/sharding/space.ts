// Where a sharded deployment keeps its leases: one per shard, one per live replica (membership), and a
// way to list the membership ones. Each lease is an ordinary LeaseBackend, so the campaign, renew,
// fence and release rules are LeaseCoordinator's, unchanged.
import type { LeaseBackend, LeaseSnapshot } from "../lease/backend.ts";

/** One membership lease as listed: `key` names the object or Lease, `snapshot` its current content. */
export interface ListedMember {
  key: string;
  snapshot: LeaseSnapshot;
}

export interface ShardLeaseSpace {
  /** `k8s_lease`, `s3_lease`, ...: for logs and /statusz. */
  readonly kind: string;
  /** Where the leases live, for messages: `namespace/name-*`, `s3://bucket/prefix/`. */
  readonly where: string;
  /** The lease of one shard (an org). */
  shard(shard: string): LeaseBackend;
  /** This replica's membership lease. */
  member(identity: string): LeaseBackend;
  /** Every membership lease that exists, read now. Throws when the listing cannot be had. */
  listMembers(signal: AbortSignal): Promise<ListedMember[]>;
  /**
   * Deletes a departed replica's membership lease, only while it is still at `version` (a replica that
   * came back in between keeps it). Missing or moved is not an error. Optional: without it they stay.
   */
  removeMember?(key: string, version: string, signal: AbortSignal): Promise<void>;
  close?(): Promise<void>;
}

// The coordination seam: who is the leader. Only the leader runs sources and commits checkpoints.

/**
 * Why a term ended. `lost`: taken over, fenced or resigned; another replica may lead already, so this
 * one must say it no longer leads before it drains. `stopping`: a clean stop; this replica still holds
 * the lease until onLose returns, so its last checkpoints commit.
 */
export type LossReason = "lost" | "stopping";

export interface LeadershipCallbacks {
  /** Awaited once leadership is won; sources and pipeline start here. */
  onAcquire(): Promise<void>;
  /** Awaited exactly once per acquisition, when leadership is lost or the run stops while leading. */
  onLose(why: LossReason): Promise<void>;
  signal: AbortSignal;
}

export interface Coordinator {
  /** Campaigns until `signal` aborts; callbacks strictly alternate. */
  run(callbacks: LeadershipCallbacks): Promise<void>;
  readonly isLeader: boolean;
  /** The current lease holder as last observed, if any. */
  readonly holder: string | undefined;
  /** Throws StateFenceError when this process may no longer commit. */
  checkFence(): void | Promise<void>;
  /**
   * Aborts the moment the current term ends by loss, fence or resignation (a write in flight stops
   * there); undefined where no term can end that way (noop).
   */
  readonly termSignal: AbortSignal | undefined;
  /**
   * Gives the current term up so another replica can lead (the watchdog's way out of a wedged leader):
   * onLose("lost"), the lease released, and no campaigning for one ttl. Returns false where there is
   * nobody to hand over to (noop) or nothing is held.
   */
  resign(reason: string): boolean;
}

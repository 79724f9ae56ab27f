// The coordination seam: who is the leader. Only the leader runs sources and commits checkpoints.

export interface LeadershipCallbacks {
  /** Awaited once leadership is won; sources and pipeline start here. */
  onAcquire(): Promise<void>;
  /** Awaited exactly once per acquisition, when leadership is lost or the run stops while leading. */
  onLose(): Promise<void>;
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
}

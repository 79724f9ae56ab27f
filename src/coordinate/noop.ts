// The default coordinator: a single instance that leads at once and never loses. There is no lease and
// no fence; the file store's exclusive lock keeps a second instance out instead.
import type { Coordinator, LeadershipCallbacks } from "./coordinator.ts";
import { whenAborted } from "./lease/waits.ts";

export class NoopCoordinator implements Coordinator {
  #leader = false;
  /** No epoch fence: the state layer skips the epoch check when this is undefined. */
  readonly epoch: number | undefined = undefined;

  get isLeader(): boolean {
    return this.#leader;
  }

  get holder(): string | undefined {
    return undefined;
  }

  checkFence(): void {
    // Nothing can take over from a lone instance.
  }

  /** A lone instance's term never ends by loss. */
  readonly termSignal: AbortSignal | undefined = undefined;

  /** Nobody to hand over to: a wedged lone instance is left to its liveness probe. */
  resign(): boolean {
    return false;
  }

  /** Awaits onAcquire, waits for the stop, returns. No onLose: the app drains the pipeline itself. */
  async run(callbacks: LeadershipCallbacks): Promise<void> {
    this.#leader = true;
    try {
      await callbacks.onAcquire();
      await whenAborted(callbacks.signal);
    } finally {
      this.#leader = false;
    }
  }
}

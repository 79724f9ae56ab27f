// A checkpoint store decorator that writes the egress budget counter with every checkpoint commit: the
// count is persisted exactly when the pipeline persists progress, in the same single write, so the
// document never has a second writer racing the committer for its compare-and-swap. Several Loki
// destinations stack one decorator each: every commit then carries every destination's count.
import type { CheckpointStore, WriteFence } from "../state/store.ts";

export class BudgetCommittingStore implements CheckpointStore {
  readonly #inner: CheckpointStore;
  readonly #key: string;
  readonly #current: () => string | undefined;

  constructor(inner: CheckpointStore, key: string, current: () => string | undefined) {
    this.#inner = inner;
    this.#key = key;
    this.#current = current;
  }

  get location(): string {
    return this.#inner.location;
  }

  load(key: string): Promise<string | undefined> {
    return this.#inner.load(key);
  }

  commit(key: string, value: string): Promise<void> {
    return this.commitMany({ [key]: value });
  }

  commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    const budget = this.#current();
    return this.#inner.commitMany(budget === undefined ? items : { ...items, [this.#key]: budget });
  }

  replace(items: Readonly<Record<string, string>>): Promise<void> {
    return this.#inner.replace(items);
  }

  delete(key: string): Promise<void> {
    return this.#inner.delete(key);
  }

  snapshot(): Promise<Record<string, string>> {
    return this.#inner.snapshot();
  }

  reset(): void {
    this.#inner.reset();
  }

  setFence(fence: WriteFence | undefined): void {
    this.#inner.setFence(fence);
  }

  claimTerm(): Promise<void> {
    return this.#inner.claimTerm();
  }

  readFenceEpoch(): Promise<number | undefined> {
    return this.#inner.readFenceEpoch();
  }

  close(): Promise<void> {
    return this.#inner.close();
  }
}

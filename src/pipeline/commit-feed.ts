// What the producers hand their sources as the checkpoint reader: the store's loads, and a feed of
// what this run committed. A source that keeps its position somewhere else too (a managed
// subscription's replay id on Salesforce) moves it only from here, so it never runs ahead of Loki.
import type { CheckpointStore } from "../state/store.ts";
import type { CheckpointReader, CommitListener } from "../sources/source.ts";

export class CommitFeed implements CheckpointReader {
  readonly #store: CheckpointStore;
  readonly #listeners = new Set<CommitListener>();

  constructor(store: CheckpointStore) {
    this.#store = store;
  }

  load(key: string): Promise<string | undefined> {
    return this.#store.load(key);
  }

  watchCommits(listener: CommitListener): () => void {
    this.#listeners.add(listener);
    return () => {
      this.#listeners.delete(listener);
    };
  }

  /** After the store wrote `commits`; a listener that throws does not stop the others or the run. */
  published(commits: ReadonlyMap<string, string>): void {
    if (this.#listeners.size === 0) return;
    for (const [key, value] of commits)
      for (const listener of this.#listeners) {
        try {
          listener(key, value);
        } catch {
          // A listener's failure is its own to report; the commit already happened.
        }
      }
  }
}

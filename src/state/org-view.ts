// One org's window onto the shared checkpoint document (spec C §1.8): every key gets `org=<name>:` in
// front. The first configured org also reads the unprefixed key a single-org deployment wrote, so moving
// to multi-org keeps its checkpoints; its next commit writes the prefixed key, and the legacy key is
// left in place (never deleted).
import type { CheckpointStore, WriteFence } from "./store.ts";

export interface OrgViewOptions {
  /** True for the first configured org only. */
  legacyFallback?: boolean;
}

export function orgPrefix(org: string): string {
  return `org=${org}:`;
}

export class OrgCheckpointView implements CheckpointStore {
  readonly inner: CheckpointStore;
  readonly org: string;
  readonly #prefix: string;
  readonly #legacyFallback: boolean;

  /** An empty org name is the identity view: keys pass through unprefixed (single-org configs). */
  constructor(inner: CheckpointStore, org: string, opts: OrgViewOptions = {}) {
    this.inner = inner;
    this.org = org;
    this.#prefix = org === "" ? "" : orgPrefix(org);
    this.#legacyFallback = org !== "" && (opts.legacyFallback ?? false);
  }

  get location(): string {
    return this.inner.location;
  }

  async load(key: string): Promise<string | undefined> {
    const value = await this.inner.load(this.#prefix + key);
    if (value !== undefined || !this.#legacyFallback) return value;
    return this.inner.load(key);
  }

  commit(key: string, value: string): Promise<void> {
    return this.inner.commit(this.#prefix + key, value);
  }

  commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    const prefixed: Record<string, string> = {};
    for (const [key, value] of Object.entries(items)) prefixed[this.#prefix + key] = value;
    return this.inner.commitMany(prefixed);
  }

  /** Replaces only this org's keys: every other org's checkpoints are kept. */
  async replace(items: Readonly<Record<string, string>>): Promise<void> {
    const all = await this.inner.snapshot();
    const next: Record<string, string> = {};
    for (const [key, value] of Object.entries(all)) if (!key.startsWith(this.#prefix)) next[key] = value;
    for (const [key, value] of Object.entries(items)) next[this.#prefix + key] = value;
    return this.inner.replace(next);
  }

  delete(key: string): Promise<void> {
    return this.inner.delete(this.#prefix + key);
  }

  /** This org's keys, unprefixed; for the first org, legacy keys fill in where no prefixed one exists. */
  async snapshot(): Promise<Record<string, string>> {
    const all = await this.inner.snapshot();
    if (this.#prefix === "") return all;
    const mine: Record<string, string> = {};
    if (this.#legacyFallback) {
      for (const [key, value] of Object.entries(all)) if (!key.startsWith("org=")) mine[key] = value;
    }
    for (const [key, value] of Object.entries(all)) {
      if (key.startsWith(this.#prefix)) mine[key.slice(this.#prefix.length)] = value;
    }
    return mine;
  }

  reset(): void {
    this.inner.reset();
  }

  setFence(fence: WriteFence | undefined): void {
    this.inner.setFence(fence);
  }

  /** The term is the whole document's, not one org's: every org's view claims the same one. */
  claimTerm(): Promise<void> {
    return this.inner.claimTerm();
  }

  readFenceEpoch(): Promise<number | undefined> {
    return this.inner.readFenceEpoch();
  }

  close(): Promise<void> {
    return this.inner.close();
  }
}

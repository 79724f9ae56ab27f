// The file checkpoint store: one JSON document in a local (or shared) file, replaced atomically on every
// write, guarded by an exclusive-instance lock, and optionally by an epoch fence for the file_lease
// coordinator (spec C §1.4).
import { silentLogger, type Logger } from "../obs/logger.ts";
import type { Clock } from "../util/clock.ts";
import { Mutex } from "../util/mutex.ts";
import { writeFileAtomic } from "./atomic-write.ts";
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
import { FileLock, type FileLockOptions } from "./file-lock.ts";
import type { FileStateSettings } from "./settings.ts";
import { errnoCode, nodeStateFs, type StateFs } from "./state-fs.ts";
import { stamped, storedEpoch, type WriteFence } from "./fence.ts";
import type { CheckpointStore } from "./store.ts";

export interface FileStoreOptions {
  /** Take the `.lock` sidecar (default true). Off under a real coordinator, or with `state --force`. */
  exclusiveLock?: boolean;
  logger?: Logger;
  clock?: Clock;
  fs?: StateFs;
  /** Lock tuning and test seams (pid, hostname, liveness). */
  lock?: Omit<FileLockOptions, "fs" | "clock" | "logger">;
}

export class FileCheckpointStore implements CheckpointStore {
  readonly location: string;
  readonly #path: string;
  readonly #fs: StateFs;
  readonly #log: Logger;
  readonly #lock: FileLock | undefined;
  readonly #mutex = new Mutex();
  #doc: CheckpointDocument | undefined;
  #fence: WriteFence | undefined;

  constructor(settings: FileStateSettings, opts: FileStoreOptions = {}) {
    this.#path = settings.path;
    this.location = settings.path;
    this.#fs = opts.fs ?? nodeStateFs;
    this.#log = (opts.logger ?? silentLogger).child({ component: "state", location: settings.path });
    this.#lock =
      opts.exclusiveLock === false
        ? undefined
        : new FileLock(settings.path, {
            ...opts.lock,
            fs: this.#fs,
            ...(opts.clock ? { clock: opts.clock } : {}),
            ...(opts.logger ? { logger: opts.logger } : {}),
          });
  }

  /** The sidecar lock file, when this store takes one. */
  get lockPath(): string | undefined {
    return this.#lock?.lockPath;
  }

  async load(key: string): Promise<string | undefined> {
    return this.#mutex.run(async () => {
      await this.#lock?.acquire();
      this.#doc ??= await this.#read();
      return lookup(this.#doc, key);
    });
  }

  async commit(key: string, value: string): Promise<void> {
    await this.commitMany({ [key]: value });
  }

  async commitMany(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#mutate((doc) => ({ ...doc, ...items }));
  }

  async replace(items: Readonly<Record<string, string>>): Promise<void> {
    await this.#mutate((doc) => ({ ...reservedOf(doc), ...withoutReserved(items) }));
  }

  async delete(key: string): Promise<void> {
    await this.#mutate((doc) => (lookup(doc, key) === undefined ? undefined : withoutKey(doc, key)));
  }

  async snapshot(): Promise<Record<string, string>> {
    return this.#mutex.run(async () => {
      await this.#lock?.acquire();
      this.#doc = await this.#read();
      return withoutReserved(this.#doc);
    });
  }

  reset(): void {
    this.#doc = undefined;
  }

  /**
   * HA: every write re-reads the file fresh (a newer leader on the shared volume may have written),
   * refuses if a newer term already stamped a higher `__fence_epoch__`, and stamps its own (spec C §1.4.6).
   */
  setFence(fence: WriteFence | undefined): void {
    this.#fence = fence;
  }

  async claimTerm(): Promise<void> {
    if (this.#fence?.epoch() === undefined) return;
    await this.#mutate((doc) => doc, "term claim");
  }

  /**
   * The highest epoch stamped in the file, read fresh: a new leader starts above it even when its
   * lease was lost or corrupted (#99), so it never fences itself out.
   */
  async readFenceEpoch(): Promise<number | undefined> {
    return storedEpoch(await this.#read(), this.#log);
  }

  async close(): Promise<void> {
    await this.#mutex.run(async () => {
      await this.#lock?.release();
    });
  }

  /** `change` returns the next document, or undefined for "nothing to write". */
  async #mutate(
    change: (doc: CheckpointDocument) => CheckpointDocument | undefined,
    op = "commit",
  ): Promise<void> {
    await this.#mutex.run(async () => {
      const fence = this.#fence;
      await fence?.check();
      await this.#lock?.acquire();
      const epoch = fence?.epoch();
      if (epoch === undefined) {
        this.#doc ??= await this.#read();
        const next = change(this.#doc);
        if (next) await this.#flush(next);
        return;
      }
      // Epoch path: always fresh from disk, so an epoch advanced by a newer leader on shared storage is seen.
      const fresh = await this.#read();
      const stored = storedEpoch(fresh, this.#log);
      if (stored !== undefined && stored > epoch) throw stateErrors.staleEpoch(this.#path, op, epoch, stored);
      const base = this.#base(fresh, stored, epoch);
      const next = change(base);
      if (!next) {
        this.#doc = base;
        return;
      }
      // Once more right before the rename (after the fsync of the temp file): a plain file has no
      // compare-and-swap, so this narrows the window in which a paused leader's write can land after
      // its term ended to the rename call itself (#17).
      await this.#flush(stamped(next, epoch), () => fence?.check());
    });
  }

  /**
   * What the next write builds on: normally the file as it is now. A document of an older term on top
   * of one this term already wrote can only be a paused former leader's rename that landed after this
   * term began (the one window a plain file leaves: docs/high-availability.md). Its values are older
   * than this term's, so the write builds on this term's own last document and replaces the stale one
   * whole, instead of leaving its keys behind until each is committed again.
   */
  #base(fresh: CheckpointDocument, stored: number | undefined, epoch: number): CheckpointDocument {
    const ours = this.#doc;
    if (stored === undefined || stored >= epoch || ours === undefined) return fresh;
    if (storedEpoch(ours, this.#log) !== epoch) return fresh;
    this.#log.warn(
      { path: this.#path, epoch, stale_epoch: stored },
      "the state file holds a write of an older term that landed after this term's (a paused former " +
        "leader); writing this term's checkpoints over it",
    );
    return ours;
  }

  /** The cache changes only after the write is durable: a failed flush leaves it as it was. */
  async #flush(next: CheckpointDocument, beforeRename?: () => void | Promise<void>): Promise<void> {
    await writeFileAtomic(this.#fs, this.#path, serialiseDocument(next), beforeRename);
    this.#doc = next;
  }

  async #read(): Promise<CheckpointDocument> {
    let bytes: Uint8Array;
    try {
      bytes = await this.#fs.readFile(this.#path);
    } catch (err) {
      if (errnoCode(err) === "ENOENT") return {};
      throw err;
    }
    const parsed = parseDocument(bytes);
    if (!parsed.ok) throw stateErrors.fileCorrupt(this.#path, parsed.problem, parsed.cause);
    return parsed.doc;
  }
}

// An object backend whose cloud SDK is loaded at its first request, not when the store is built. The
// S3, GCS and Azure client libraries cost 34-41 MiB of RSS each when imported; a daemon loads only the
// one its config names, and `--check` loads none. The hints (and every check of the settings) are
// worked out before, so configuration errors still surface offline.
import { LazyLoad } from "../util/lazy-load.ts";
import type { ObjectStoreHints } from "./errors.ts";
import type { ErrorClass, ObjectBackend, Precondition, StoredObject } from "./object-backend.ts";

export class LazyBackend implements ObjectBackend {
  readonly hints: ObjectStoreHints;
  readonly #backend: LazyLoad<ObjectBackend>;

  /** `what` names the library in a load failure, e.g. `the S3 client (@aws-sdk/client-s3)`. */
  constructor(hints: ObjectStoreHints, what: string, load: () => Promise<ObjectBackend>) {
    this.hints = hints;
    this.#backend = new LazyLoad(hints.location, what, load);
  }

  async get(signal: AbortSignal): Promise<StoredObject | undefined> {
    return (await this.#backend.get()).get(signal);
  }

  async put(bytes: Uint8Array, precondition: Precondition, signal: AbortSignal): Promise<string | undefined> {
    return (await this.#backend.get()).put(bytes, precondition, signal);
  }

  async list(prefix: string, signal: AbortSignal): Promise<string[]> {
    const backend = await this.#backend.get();
    if (!backend.list) throw new Error(`${this.hints.location}: this backend cannot list objects`);
    return backend.list(prefix, signal);
  }

  async delete(token: string | undefined, signal: AbortSignal): Promise<void> {
    const backend = await this.#backend.get();
    if (!backend.delete) throw new Error(`${this.hints.location}: this backend cannot delete objects`);
    return backend.delete(token, signal);
  }

  /** Only errors from get/put are classified, and those come from a loaded backend. */
  classify(err: unknown): ErrorClass {
    return this.#backend.value?.classify(err) ?? "other";
  }

  /** Also closes a backend whose load was still in flight: its client must not outlive the store. */
  async close(): Promise<void> {
    await (await this.#backend.settled())?.close();
  }
}

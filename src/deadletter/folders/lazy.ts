// A dead-letter folder whose cloud SDK loads at its first request, like the checkpoint store's
// backends (state/lazy-backend.ts): a file-store daemon and `--check` load no SDK, and a daemon with
// no refused entry never loads it for dead letters either.
import { LazyLoad } from "../../util/lazy-load.ts";
import type { FolderObject, ObjectFolder } from "../object-folder.ts";

export class LazyFolder implements ObjectFolder {
  readonly location: string;
  readonly #folder: LazyLoad<ObjectFolder>;

  /** `what` names the library in a load failure, e.g. `the S3 client (@aws-sdk/client-s3)`. */
  constructor(location: string, what: string, load: () => Promise<ObjectFolder>) {
    this.location = location;
    this.#folder = new LazyLoad(location, what, load);
  }

  async list(signal: AbortSignal): Promise<FolderObject[]> {
    return (await this.#folder.get()).list(signal);
  }

  async get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    return (await this.#folder.get()).get(name, signal);
  }

  async put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    return (await this.#folder.get()).put(name, bytes, signal);
  }

  async delete(name: string, signal: AbortSignal): Promise<void> {
    return (await this.#folder.get()).delete(name, signal);
  }

  /** Also closes a folder whose load was still in flight: its client must not outlive the store. */
  async close(): Promise<void> {
    await (await this.#folder.settled())?.close();
  }
}

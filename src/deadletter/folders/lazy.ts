// A dead-letter folder whose cloud SDK loads at its first request, like the checkpoint store's
// backends (state/lazy-backend.ts): a file-store daemon and `--check` load no SDK, and a daemon with
// no refused entry never loads it for dead letters either.
import { ConfigError, describeError } from "../../errors.ts";
import type { FolderObject, ObjectFolder } from "../object-folder.ts";

export class LazyFolder implements ObjectFolder {
  readonly location: string;
  readonly #what: string;
  readonly #load: () => Promise<ObjectFolder>;
  #loading: Promise<ObjectFolder> | undefined;
  #folder: ObjectFolder | undefined;

  /** `what` names the library in a load failure, e.g. `the S3 client (@aws-sdk/client-s3)`. */
  constructor(location: string, what: string, load: () => Promise<ObjectFolder>) {
    this.location = location;
    this.#what = what;
    this.#load = load;
  }

  async list(signal: AbortSignal): Promise<FolderObject[]> {
    return (await this.#loaded()).list(signal);
  }

  async get(name: string, signal: AbortSignal): Promise<Uint8Array | undefined> {
    return (await this.#loaded()).get(name, signal);
  }

  async put(name: string, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
    return (await this.#loaded()).put(name, bytes, signal);
  }

  async delete(name: string, signal: AbortSignal): Promise<void> {
    return (await this.#loaded()).delete(name, signal);
  }

  close(): Promise<void> {
    return this.#folder?.close() ?? Promise.resolve();
  }

  #loaded(): Promise<ObjectFolder> {
    if (this.#folder) return Promise.resolve(this.#folder);
    this.#loading ??= this.#load().then(
      (folder) => (this.#folder = folder),
      (err: unknown) => {
        // Not cached: a transient loader failure may pass on the next attempt.
        this.#loading = undefined;
        throw new ConfigError(
          `${this.location}: ${this.#what} cannot be loaded (${describeError(err)}); reinstall sf2loki with its dependencies`,
          { cause: err },
        );
      },
    );
    return this.#loading;
  }
}

// A client built on first use, for the object-store SDKs that cost tens of MiB of RSS when imported:
// the checkpoint backends (state/lazy-backend.ts) and the dead-letter folders (deadletter/folders/
// lazy.ts) load theirs through this, so a config that never reaches one never pays for it.
import { ConfigError, describeError } from "../errors.ts";

export class LazyLoad<T> {
  readonly #where: string;
  readonly #what: string;
  readonly #load: () => Promise<T>;
  #loading: Promise<T> | undefined;
  #value: T | undefined;

  /** `what` names the library in a load failure, e.g. `the S3 client (@aws-sdk/client-s3)`. */
  constructor(where: string, what: string, load: () => Promise<T>) {
    this.#where = where;
    this.#what = what;
    this.#load = load;
  }

  /** The loaded value, if the load has finished. */
  get value(): T | undefined {
    return this.#value;
  }

  /** The value, loading it on the first call; a failed load is not cached and is tried again next time. */
  get(): Promise<T> {
    if (this.#value !== undefined) return Promise.resolve(this.#value);
    this.#loading ??= this.#load().then(
      (value) => (this.#value = value),
      (err: unknown) => {
        // Not cached: a transient loader failure (EMFILE) may pass on the next attempt.
        this.#loading = undefined;
        throw new ConfigError(
          `${this.#where}: ${this.#what} cannot be loaded (${describeError(err)}); ` +
            `reinstall sf2loki with its dependencies`,
          { cause: err },
        );
      },
    );
    return this.#loading;
  }

  /** The value once a load in flight settles (undefined if none ran or it failed): what to close. */
  async settled(): Promise<T | undefined> {
    return this.#value ?? (await this.#loading?.catch(() => undefined));
  }
}

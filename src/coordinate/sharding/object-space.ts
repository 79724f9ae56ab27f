// Sharding on objects in one bucket (S3, GCS) or container (Azure): `<key>/<org>` per shard and
// `<key>/members/<identity>` per replica, where `<key>` is the lease's configured key (object_name,
// blob_name). Membership is one listing under `<key>/members/` and a read of each object found.
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseBackend } from "../lease/backend.ts";
import { describeError } from "../../errors.ts";
import { objectMemberKey, objectMembersPrefix, objectShardKey } from "./names.ts";
import type { ListedMember, ShardLeaseSpace } from "./space.ts";

export interface ObjectShardSpaceOptions {
  kind: "s3_lease" | "gcs_lease" | "azure_lease";
  /** `s3://bucket`, `gs://bucket`, `azure://account/container`: for messages. */
  bucketUri: string;
  /** The configured lease key; every shard and member key hangs under it. */
  prefix: string;
  /** A lease backend on `key` (with its `.epoch` sidecar), built on the state store's adapter. */
  backendAt: (key: string) => LeaseBackend;
  /** The names under a prefix in the same bucket. */
  list: (prefix: string, signal: AbortSignal) => Promise<string[]>;
  /** Deletes `key` if still at `token` (undefined: unconditionally); missing or moved is no error. */
  remove?: (key: string, token: string | undefined, signal: AbortSignal) => Promise<void>;
}

export class ObjectShardSpace implements ShardLeaseSpace {
  readonly kind: "s3_lease" | "gcs_lease" | "azure_lease";
  readonly where: string;
  readonly #opts: ObjectShardSpaceOptions;
  /** Reader backends of listed members, kept so their clients are reused across listings. */
  readonly #readers = new Map<string, LeaseBackend>();

  constructor(opts: ObjectShardSpaceOptions) {
    this.kind = opts.kind;
    this.where = `${opts.bucketUri}/${opts.prefix}/`;
    this.#opts = opts;
  }

  shard(shard: string): LeaseBackend {
    return this.#opts.backendAt(objectShardKey(this.#opts.prefix, shard));
  }

  member(identity: string): LeaseBackend {
    return this.#opts.backendAt(objectMemberKey(this.#opts.prefix, identity));
  }

  async listMembers(signal: AbortSignal): Promise<ListedMember[]> {
    const prefix = objectMembersPrefix(this.#opts.prefix);
    let keys: string[];
    try {
      keys = (await this.#opts.list(prefix, signal)).filter((k) => !k.endsWith(".epoch"));
    } catch (err) {
      throw new LeaseUnreadableError(
        `${this.#opts.bucketUri}/${prefix}`,
        `cannot list the membership leases (${describeError(err)}); grant the sf2loki identity list access on that bucket`,
        { cause: err },
      );
    }
    for (const key of this.#readers.keys()) {
      if (!keys.includes(key)) {
        void this.#readers
          .get(key)
          ?.close?.()
          .catch(() => undefined);
        this.#readers.delete(key);
      }
    }
    const listed = await Promise.all(
      keys.map(async (key) => {
        let reader = this.#readers.get(key);
        if (!reader) {
          reader = this.#opts.backendAt(key);
          this.#readers.set(key, reader);
        }
        const snapshot = await reader.read(signal);
        return snapshot ? { key, snapshot } : undefined;
      }),
    );
    return listed.filter((m): m is ListedMember => m !== undefined);
  }

  async removeMember(key: string, version: string, signal: AbortSignal): Promise<void> {
    const remove = this.#opts.remove;
    if (!remove) return;
    await remove(key, version, signal);
    // The lease's epoch sidecar goes with it; a member lease's epoch fences nothing.
    await remove(`${key}.epoch`, undefined, signal);
  }

  async close(): Promise<void> {
    await Promise.all([...this.#readers.values()].map((r) => r.close?.() ?? Promise.resolve()));
    this.#readers.clear();
  }
}

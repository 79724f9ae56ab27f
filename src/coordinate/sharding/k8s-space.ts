// Sharding on coordination.k8s.io/v1 Leases in one namespace: `<name>-<org>` per shard and
// `<name>-member-<identity>` per replica, all labelled `sf2loki.io/lease-set=<name>` so one LIST by
// label selector finds the members (the Role needs the `list` verb on leases).
import { LeaseUnreadableError } from "../errors.ts";
import type { LeaseApi, LeaseListApi } from "../k8s-lease/api.ts";
import { apiStatus, describeApiError } from "../k8s-lease/api.ts";
import { K8sLeaseBackend } from "../k8s-lease/backend.ts";
import { leaseSnapshot } from "../k8s-lease/mapping.ts";
import type { LeaseBackend } from "../lease/backend.ts";
import {
  LEASE_ROLE_LABEL,
  LEASE_SET_LABEL,
  k8sMemberLeaseName,
  k8sShardLeaseName,
  labelSafe,
} from "./names.ts";
import type { ListedMember, ShardLeaseSpace } from "./space.ts";

/** The API, connected once for every Lease of the set. */
export interface K8sLeaseClients {
  lease(name: string): LeaseApi;
  list: LeaseListApi;
}

export interface K8sShardSpaceOptions {
  namespace: string;
  /** `coordinate.k8s_lease.name`: the prefix of every Lease name and the lease-set label. */
  name: string;
  connect: () => Promise<K8sLeaseClients>;
}

export class K8sShardSpace implements ShardLeaseSpace {
  readonly kind = "k8s_lease";
  readonly where: string;
  readonly #namespace: string;
  readonly #name: string;
  readonly #connect: () => Promise<K8sLeaseClients>;
  #clients: Promise<K8sLeaseClients> | undefined;

  constructor(opts: K8sShardSpaceOptions) {
    this.#namespace = opts.namespace;
    this.#name = opts.name;
    this.#connect = opts.connect;
    this.where = `${opts.namespace}/${opts.name}-*`;
  }

  shard(shard: string): LeaseBackend {
    return this.#backend(k8sShardLeaseName(this.#name, shard), "shard");
  }

  member(identity: string): LeaseBackend {
    return this.#backend(k8sMemberLeaseName(this.#name, identity), "member");
  }

  async listMembers(signal: AbortSignal): Promise<ListedMember[]> {
    const selector = `${LEASE_SET_LABEL}=${labelSafe(this.#name)},${LEASE_ROLE_LABEL}=member`;
    let leases;
    try {
      leases = await (await this.#clientsOnce()).list.list(selector, signal);
    } catch (err) {
      throw new LeaseUnreadableError(
        `${this.#namespace} (leases labelled ${selector})`,
        `${describeApiError(err)}; the Role needs the 'list' verb on leases for sharding`,
        { cause: err },
      );
    }
    return leases.map((lease) => {
      const key = lease.metadata.name ?? "";
      return { key, snapshot: leaseSnapshot(lease, `${this.#namespace}/${key}`) };
    });
  }

  async removeMember(key: string, version: string, signal: AbortSignal): Promise<void> {
    try {
      await (await this.#clientsOnce()).list.remove(key, version, signal);
    } catch (err) {
      const status = apiStatus(err);
      if (status !== 404 && status !== 409) throw err;
    }
  }

  #backend(leaseName: string, role: "shard" | "member"): LeaseBackend {
    return new K8sLeaseBackend({
      namespace: this.#namespace,
      name: leaseName,
      labels: {
        [LEASE_SET_LABEL]: labelSafe(this.#name),
        [LEASE_ROLE_LABEL]: role,
        "app.kubernetes.io/managed-by": "sf2loki",
      },
      connect: async () => (await this.#clientsOnce()).lease(leaseName),
    });
  }

  #clientsOnce(): Promise<K8sLeaseClients> {
    const clients = (this.#clients ??= this.#connect());
    // A failed connect is not cached: the next call tries again.
    clients.catch(() => {
      if (this.#clients === clients) this.#clients = undefined;
    });
    return clients;
  }
}

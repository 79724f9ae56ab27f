// The two Lease calls only sharding makes: a LIST by label selector (the membership leases) and a
// conditional DELETE (a departed replica's membership lease). Kept apart from client.ts so a
// single-lease deployment's Role stays exactly get/create/update; a sharded one adds list and delete.
import { CoordinationV1Api, KubeConfig, V1DeleteOptions, V1Preconditions } from "@kubernetes/client-node";
import type { LeaseListApi, LeaseObject } from "./api.ts";
import { fromV1, withSignal } from "./client.ts";

export function leaseListFor(kc: KubeConfig, namespace: string): LeaseListApi {
  const api = kc.makeApiClient(CoordinationV1Api);
  return {
    list: async (labelSelector, signal) => {
      const out: LeaseObject[] = [];
      let cont: string | undefined;
      do {
        const page = await api.listNamespacedLease(
          { namespace, labelSelector, ...(cont ? { _continue: cont } : {}) },
          withSignal(signal),
        );
        for (const lease of page.items) out.push(fromV1(lease));
        cont = page.metadata?._continue || undefined;
      } while (cont);
      return out;
    },
    remove: async (name, resourceVersion, signal) => {
      const body = new V1DeleteOptions();
      body.preconditions = Object.assign(new V1Preconditions(), { resourceVersion });
      await api.deleteNamespacedLease({ name, namespace, body }, withSignal(signal));
    },
  };
}

// What the sharded-daemon tests share: replicas on the k8s emulator's Leases at test timing (3 s / 1 s),
// a config with one `orgs[]` entry per simulated org polling what it serves, and an async wait.
import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import { validateConfig } from "../../src/config/load.ts";
import { leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { leaseListFor } from "../../src/coordinate/k8s-lease/list-client.ts";
import { K8sShardSpace } from "../../src/coordinate/sharding/k8s-space.ts";
import { pollingSources, simSalesforceConfig } from "../../src/sim/demo-polling.ts";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import type { K8sEmulator } from "./k8s-emulator.ts";

export const NS = "sf2loki";
export const NAME = "sf2loki-leader";

/** Replica `replica`'s shard space on the emulator (its own bearer token, so its own identity). */
export function space(emu: K8sEmulator, replica: string): K8sShardSpace {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "emulator", server: emu.url, skipTLSVerify: true }],
    users: [{ name: "replica", token: `token-${replica}` }],
    contexts: [{ name: "emulator", cluster: "emulator", user: "replica" }],
    currentContext: "emulator",
  });
  return new K8sShardSpace({
    namespace: NS,
    name: NAME,
    connect: () => Promise.resolve({ lease: (n) => leaseApiFor(kc, NS, n), list: leaseListFor(kc, NS) }),
  });
}

/** Each org polling what its sim serves (`tune` may change its `sources:`), sharded on the emulator. */
export function shardedConfig(
  orgs: Record<string, SimOrg>,
  pushUrl: string,
  statePath: string,
  tune: (sources: Record<string, unknown>) => Record<string, unknown> = (s) => s,
) {
  return validateConfig({
    orgs: Object.entries(orgs).map(([name, org]) => ({
      name,
      salesforce: simSalesforceConfig(org, DEMO_SECRET),
      sources: tune(pollingSources(org.rest.data)),
    })),
    sink: { loki: { url: pushUrl, batch: { flush_interval: "50ms" } } },
    state: { file: { path: statePath } },
    coordinate: {
      type: "k8s_lease",
      k8s_lease: { namespace: NS, name: NAME, lease_duration: "3s", renew_interval: "1s" },
      sharding: { enabled: true },
    },
  });
}

export async function until(
  cond: () => boolean | Promise<boolean>,
  what: string,
  ms = 30_000,
): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await cond())) {
    assert.ok(Date.now() < deadline, `${what}: not within ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

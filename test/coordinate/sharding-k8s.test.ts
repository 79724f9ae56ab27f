// Sharding on Kubernetes Leases through the real @kubernetes/client-node against the loopback API server.
import { after, afterEach, before, beforeEach, describe } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { leaseListFor } from "../../src/coordinate/k8s-lease/list-client.ts";
import { K8sShardSpace } from "../../src/coordinate/sharding/k8s-space.ts";
import { k8sMemberLeaseName, k8sShardLeaseName } from "../../src/coordinate/sharding/names.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { ShardSim } from "./sharding-harness.ts";
import { shardingScenarios, type ShardFixture } from "./sharding-scenarios.ts";

const NS = "sf2loki";
const NAME = "sf2loki-shard";

/** A real KubeConfig for the emulator; the token tells the emulator which replica is calling. */
function emulatorKubeConfig(server: string, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "emulator", server, skipTLSVerify: true }],
    users: [{ name: "replica", token }],
    contexts: [{ name: "emulator", cluster: "emulator", user: "replica" }],
    currentContext: "emulator",
  });
  return kc;
}

describe("sharding on k8s_lease", () => {
  let emu: K8sEmulator;
  let fixture: ShardFixture;

  before(async () => {
    emu = await K8sEmulator.start();
  });
  after(async () => {
    await emu.close();
  });

  beforeEach(() => {
    emu.reset();
    const sim = new ShardSim(
      (replica) =>
        new K8sShardSpace({
          namespace: NS,
          name: NAME,
          connect: () => {
            const kc = emulatorKubeConfig(emu.url, `token-${replica}`);
            return Promise.resolve({
              lease: (name) => leaseApiFor(kc, NS, name),
              list: leaseListFor(kc, NS),
            });
          },
        }),
    );
    const holder = (name: string): string | undefined => {
      const lease = emu.lease(NS, name) as { spec?: { holderIdentity?: string | null } } | undefined;
      return lease ? (lease.spec?.holderIdentity ?? "") : undefined;
    };
    fixture = {
      sim,
      shardHolder: (org) => holder(k8sShardLeaseName(NAME, org)),
      memberHolder: (replica) => holder(k8sMemberLeaseName(NAME, replica)),
      partition: (r) => {
        r.tracker.hanging = true;
        emu.partition(`token-${r.name}`);
      },
      steal: (org, holder) => {
        emu.seed(NS, k8sShardLeaseName(NAME, org), {
          metadata: { labels: { "sf2loki.io/lease-set": NAME, "sf2loki.io/lease-role": "shard" } },
          spec: {
            holderIdentity: holder,
            leaseTransitions: 99,
            leaseDurationSeconds: 30,
            renewTime: new Date(sim.clock.now()).toISOString().replace("Z", "000Z"),
          },
        });
      },
    };
  });

  afterEach(async () => {
    for (const r of fixture.sim.replicas) emu.heal(`token-${r.name}`);
    await fixture.sim.stopAll();
  });

  shardingScenarios(() => fixture);
});

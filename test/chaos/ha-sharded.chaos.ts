// coordinate.sharding end to end with real daemons: 3 `sf2loki` processes x 6 simulated orgs, Leases on
// the Kubernetes API emulator, checkpoints in one directory (a document per org). They split the orgs
// 2/2/2; a kill -9 moves the dead replica's orgs within ttl + renew; a 4th replica takes its share by
// clean hand-over (no ttl wait); SIGTERM releases every shard and membership Lease.
import assert from "node:assert/strict";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { pollingSources, simSalesforceConfig } from "../../src/sim/demo-polling.ts";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { startSimOrg, type SimOrg } from "../../src/sim/salesforce/index.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { tempDir } from "../support/tmp.ts";
import { RENEW_MS, Replica, TTL_MS, eventually, kubeconfigFor } from "./ha-support.ts";
import type { ShardingStatus as Sharding } from "./sharding-support.ts";

const NS = "sf2loki";
const NAME = "sf2loki-leader";
const ORGS = ["acme", "globex", "initech", "umbrella", "hooli", "stark"];

async function sharding(r: Replica): Promise<Sharding | undefined> {
  try {
    return (JSON.parse((await r.get("/statusz")).body) as { sharding: Sharding }).sharding;
  } catch {
    return undefined;
  }
}

async function heldBy(rs: Replica[]): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>();
  for (const r of rs) out.set(r.name, (await sharding(r))?.shards.map((s) => s.org).sort() ?? []);
  return out;
}

/** Every org held by exactly one of `rs`, each holding `counts` (any order). */
async function balanced(rs: Replica[], counts: number[]): Promise<boolean> {
  const held = await heldBy(rs);
  const all = [...held.values()].flat();
  const sizes = [...held.values()].map((h) => h.length).sort();
  return (
    all.length === ORGS.length &&
    new Set(all).size === ORGS.length &&
    sizes.join() === [...counts].sort().join()
  );
}

test("3 sharded daemons x 6 orgs: split 2/2/2, kill -9 moves within ttl + renew, a 4th joins by hand-over, SIGTERM releases all", async (t) => {
  const emu = await K8sEmulator.start();
  t.after(() => emu.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const orgs: Record<string, SimOrg> = {};
  for (const [i, name] of ORGS.entries()) {
    orgs[name] = await startSimOrg({
      orgId: `00DSIM${String(i).padStart(12, "0")}A`,
      clientSecret: DEMO_SECRET,
      topics: [],
      eventsPerTopic: 0,
      polling: { objects: { LoginEvent: { records: 20 } }, apexLogs: 5 },
    });
    t.after(() => orgs[name]!.stop());
  }
  const dir = tempDir();
  const replicas: Replica[] = [];
  t.after(async () => {
    await Promise.all(replicas.map((r) => r.shutDown()));
  });
  const spawn = (name: string): Replica => {
    const kc = join(dir, `kubeconfig-${name}.yaml`);
    writeFileSync(kc, kubeconfigFor(emu.url, `token-${name}`));
    const config = join(dir, `${name}.yaml`);
    writeFileSync(
      config,
      stringify({
        orgs: ORGS.map((org) => ({
          name: org,
          salesforce: simSalesforceConfig(orgs[org]!, DEMO_SECRET),
          sources: pollingSources(orgs[org]!.rest.data),
        })),
        sink: { loki: { url: loki.pushUrl, batch: { flush_interval: "50ms" } } },
        state: { store: "file", file: { path: join(dir, "state.json") } },
        coordinate: {
          type: "k8s_lease",
          k8s_lease: {
            namespace: NS,
            name: NAME,
            identity: name,
            lease_duration: `${TTL_MS / 1000}s`,
            renew_interval: `${RENEW_MS / 1000}s`,
            kubeconfig: kc,
          },
          sharding: { enabled: true },
        },
        service: { health_addr: "127.0.0.1:0", log_level: "info" },
      }),
    );
    const r = new Replica(name, config, {});
    replicas.push(r);
    return r;
  };

  const [a, b, c] = ["pod-a", "pod-b", "pod-c"].map(spawn) as [Replica, Replica, Replica];
  await Promise.all([a, b, c].map((r) => r.waitHealth(30_000)));
  await eventually(() => balanced([a, b, c], [2, 2, 2]), 30_000, "3 daemons split 6 orgs 2/2/2");
  await eventually(
    () => Promise.resolve(ORGS.every((org) => loki.entries({ org }).length >= 25)),
    30_000,
    "every org delivered",
  );
  for (const org of ORGS) assert.ok(existsSync(join(dir, `state-${org}.json`)), `${org}'s own document`);

  // kill -9: the survivors take the dead replica's orgs once its leases stand still for a ttl.
  const killedAt = Date.now();
  c.kill("SIGKILL");
  await eventually(() => balanced([a, b], [3, 3]), 5 * TTL_MS, "the survivors take c's orgs");
  const moved = Date.now() - killedAt;
  t.diagnostic(`kill -9: c's orgs held by a and b ${moved} ms later (ttl ${TTL_MS}, renew ${RENEW_MS})`);
  assert.ok(
    moved <= TTL_MS + RENEW_MS + 1000,
    `moved after ${moved} ms; want <= ttl + renew (+1 s of polling)`,
  );

  // A 4th replica: its share moves by clean hand-over, well within a ttl.
  const joinedAt = Date.now();
  const d = spawn("pod-d");
  await d.waitHealth(30_000);
  await eventually(() => balanced([a, b, d], [2, 2, 2]), 5 * TTL_MS, "d gets its share");
  const joined = Date.now() - joinedAt;
  t.diagnostic(`join: d holds its share ${joined} ms after it was spawned (process start included)`);
  // /statusz can tell before the children's log lines have reached us: wait for the lines themselves.
  const releasing = () =>
    [a, b].flatMap((r) =>
      r.logs.filter(
        (l) =>
          l.msg === "releasing shard: draining and committing, then releasing its lease" &&
          l.time >= joinedAt,
      ),
    );
  const acquiring = () =>
    d.logs.filter((l) => l.msg === "shard acquired: starting its pipeline").map((l) => l.time);
  await eventually(
    () => Promise.resolve(releasing().length >= 2 && acquiring().length >= 2),
    5_000,
    "the hand-overs' log lines",
  );
  const released = releasing();
  assert.equal(released.length, 2, "a and b each handed one org over cleanly");
  const drainStarted = Math.max(...released.map((l) => l.time));
  const leaseReleased = Math.max(
    ...[a, b].flatMap((r) =>
      r.logs.filter((l) => l.msg === "released lease" && l.time >= joinedAt).map((l) => l.time),
    ),
  );
  const acquired = acquiring();
  assert.equal(acquired.length, 2);
  const wait = Math.max(...acquired) - leaseReleased;
  t.diagnostic(
    `join: the hand-overs drained for ${leaseReleased - drainStarted} ms; d acquired ${wait} ms after the last release`,
  );
  assert.ok(wait < TTL_MS, `d acquired ${wait} ms after the release; a clean release needs no ttl wait`);

  // SIGTERM: every shard Lease and the survivors' membership Leases released.
  await Promise.all([a, b, d].map((r) => r.shutDown()));
  for (const r of [a, b, d]) assert.equal((await r.exited).code, 0, `${r.name} exits 0:\n${r.tail()}`);
  const holder = (name: string): unknown =>
    (emu.lease(NS, name) as { spec?: { holderIdentity?: string } } | undefined)?.spec?.holderIdentity ?? "";
  for (const org of ORGS) assert.equal(holder(`${NAME}-${org}`), "", `${org}'s Lease released`);
  for (const r of ["pod-a", "pod-b", "pod-d"])
    assert.equal(holder(`${NAME}-member-${r}`), "", `${r} membership released`);
});

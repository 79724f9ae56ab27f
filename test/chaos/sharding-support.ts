// The sharding proof's rig: real sf2loki daemons under `coordinate.sharding`, every org of a multi-org
// simulated Salesforce a shard, against the Loki receiver and a lease space on an emulator (k8s Leases
// or S3 lease objects), with every shard's checkpoint document in the S3 emulator. It reads what the
// replicas say (/statusz `sharding`), what the lease space holds, and every write the emulators
// recorded, for the checker that no shard ever had two replicas committing.
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { stringify } from "yaml";
import { deepMerge } from "../../src/config/env.ts";
import { startMultiOrgWorld, type MultiOrgWorld } from "../../src/sim/multi-org-world.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import {
  assertOneCommitterPerShard,
  k8sLeaseWrites,
  s3Commits,
  s3LeaseWrites,
  type ShardLeaseWrite,
} from "../support/shard-history.ts";
import {
  RENEW_MS,
  Replica,
  TTL_MS,
  kubeconfigFor,
  startRealLokiForwarder,
  waitFor,
  type RealLokiTarget,
} from "./ha-support.ts";

export { RENEW_MS, TTL_MS };

export type ShardPairing = "k8s_lease + s3" | "s3_lease + s3";

/** The tests' short lease timing (failover bounds in seconds); a bench may pass production timing. */
export interface LeaseTiming {
  ttl: string;
  renew_interval: string;
}
const TEST_TIMING: LeaseTiming = { ttl: "3s", renew_interval: "1s" };
const BUCKET = "sf2loki-shards";
/** The configured state key: each shard writes `sf2loki/state-<org>.json`. */
export const STATE_KEY = "sf2loki/state.json";
/** s3_lease: shard leases at `<key>/<org>`, membership at `<key>/members/<identity>`. */
export const LEASE_KEY = "sf2loki/leases";
/** k8s_lease: shard Leases `<name>-<org>`, membership Leases `<name>-member-<identity>`. */
export const LEASE_NAME = "sf2loki";
const NAMESPACE = "sf2loki";

/** What a replica's /statusz says about its shards (the sharding contract). */
export interface ShardingStatus {
  replica: string;
  members: string[];
  fair_share: number;
  shards: { org: string; epoch: number; since: string }[];
}

export class ShardRig {
  readonly kind: ShardPairing;
  readonly world: MultiOrgWorld;
  readonly s3: S3Emulator;
  readonly k8s: K8sEmulator | undefined;
  readonly replicas: Replica[] = [];
  readonly #dir: string;
  readonly #s3Url: string;
  readonly #timing: LeaseTiming;
  #stopPublishing: () => void = () => undefined;

  /** Set when the replicas push to the real Loki through a forwarder. */
  #lokiPushUrl: string | undefined;

  private constructor(
    kind: ShardPairing,
    world: MultiOrgWorld,
    s3: S3Emulator,
    s3Url: string,
    k8s: K8sEmulator | undefined,
    dir: string,
    timing: LeaseTiming,
  ) {
    this.kind = kind;
    this.world = world;
    this.s3 = s3;
    this.#s3Url = s3Url;
    this.k8s = k8s;
    this.#dir = dir;
    this.#timing = timing;
  }

  /** Everything it starts is stopped at the end of `t`: traffic, replicas, emulators, world. */
  static async start(
    t: TestContext,
    kind: ShardPairing,
    world: { orgs: number; seed: number; eventsPerTopic: number },
    timing: LeaseTiming = TEST_TIMING,
    opts: { realLoki?: RealLokiTarget } = {},
  ): Promise<ShardRig> {
    const dir = mkdtempSync(join(tmpdir(), "sf2loki-shard-"));
    const stack: (() => Promise<void> | void)[] = [
      () => {
        rmSync(dir, { recursive: true, force: true });
      },
    ];
    t.after(async () => {
      for (const step of stack.reverse()) await step();
    });
    const sim = await startMultiOrgWorld(world);
    stack.push(() => sim.stop());
    const s3 = new S3Emulator({ buckets: [BUCKET] });
    const s3Url = await s3.start();
    stack.push(() => s3.close());
    let k8s: K8sEmulator | undefined;
    if (kind === "k8s_lease + s3") {
      const api = await K8sEmulator.start();
      k8s = api;
      stack.push(() => api.close());
    }
    const rig = new ShardRig(kind, sim, s3, s3Url, k8s, dir, timing);
    if (opts.realLoki) {
      // The replicas push to (and look up in) the real Loki; what it accepts is copied to the world's
      // receiver, which the proof's own checks read (test/loki-real/ha.loki.ts judges by LogQL).
      const forwarder = await startRealLokiForwarder(opts.realLoki, sim.loki.url, (a) => {
        a.send();
      });
      stack.push(() => forwarder.close());
      rig.#lokiPushUrl = sim.loki.pushUrl.replace(sim.loki.url, forwarder.url);
    }
    stack.push(async () => {
      rig.#stopPublishing();
      await Promise.all(rig.replicas.map((r) => r.shutDown()));
      const quiet = (): boolean => sim.sim.orgs.every((o) => o.stats().streams.every((s) => !s.active));
      await waitFor(quiet, 5000, "the orgs' streams to close").catch(() => undefined);
    });
    return rig;
  }

  get shards(): string[] {
    return this.world.names;
  }

  get alive(): Replica[] {
    return this.replicas.filter((r) => r.alive);
  }

  replica(name: string): Replica {
    const found = this.replicas.find((r) => r.name === name);
    if (!found) throw new Error(`no replica ${name}`);
    return found;
  }

  /** Starts replica `name` (its lease identity and its S3 access key id) and waits for its health server. */
  async spawn(name: string): Promise<Replica> {
    const base = this.world.config(join(this.#dir, "unused-state.json"));
    const s3 = { bucket: BUCKET, endpoint_url: this.#s3Url, region: "us-east-1" };
    const coordinate =
      this.kind === "k8s_lease + s3"
        ? {
            type: "k8s_lease",
            sharding: { enabled: true },
            k8s_lease: {
              namespace: NAMESPACE,
              name: LEASE_NAME,
              identity: name,
              lease_duration: this.#timing.ttl,
              renew_interval: this.#timing.renew_interval,
              kubeconfig: this.#kubeconfig(name),
            },
          }
        : {
            type: "s3_lease",
            sharding: { enabled: true },
            s3_lease: { ...s3, key: LEASE_KEY, holder_id: name, ...this.#timing },
          };
    const over = {
      coordinate,
      ...(this.#lokiPushUrl ? { sink: { loki: { url: this.#lokiPushUrl } } } : {}),
      state: { store: "s3", s3: { ...s3, key: STATE_KEY } },
      service: { log_level: "info" },
    };
    const config = join(this.#dir, `${name}.yaml`);
    writeFileSync(config, stringify(deepMerge(base, over)));
    const replica = new Replica(name, config, {
      // The S3 emulator records the signing key id with every write: that is how a write is attributed.
      AWS_ACCESS_KEY_ID: name,
      AWS_SECRET_ACCESS_KEY: "shard-test",
      AWS_EC2_METADATA_DISABLED: "true",
    });
    this.replicas.push(replica);
    await replica.waitHealth(20_000);
    return replica;
  }

  #kubeconfig(name: string): string {
    const path = join(this.#dir, `kubeconfig-${name}.yaml`);
    writeFileSync(path, kubeconfigFor(this.k8s?.url ?? "", `token-${name}`));
    return path;
  }

  /** The replica's /statusz `sharding` block; undefined when it does not answer. */
  async status(r: Replica): Promise<ShardingStatus | undefined> {
    try {
      const { status, body } = await r.get("/statusz");
      if (status !== 200) return undefined;
      return (JSON.parse(body) as { sharding?: ShardingStatus }).sharding;
    } catch {
      return undefined;
    }
  }

  /** Shards each live replica says it holds. */
  async held(): Promise<Map<string, string[]>> {
    const alive = this.alive.filter((r) => r.url !== undefined);
    const statuses = await Promise.all(alive.map((r) => this.status(r)));
    return new Map(alive.map((r, i) => [r.name, (statuses[i]?.shards ?? []).map((s) => s.org).sort()]));
  }

  /** Per live replica, the orgs whose `sf2loki_shard_leader{org}` it exports as 1. */
  async shardLeaderGauges(): Promise<Map<string, string[]>> {
    const alive = this.alive.filter((r) => r.url !== undefined);
    const bodies = await Promise.all(alive.map((r) => r.get("/metrics").then((m) => m.body)));
    return new Map(
      alive.map((r, i) => {
        const leading: string[] = [];
        for (const [, labels, value] of bodies[i]!.matchAll(/^sf2loki_shard_leader\{([^}]*)\}\s+(\S+)/gm)) {
          const org = /(?:^|,)org="([^"]*)"/.exec(labels!)?.[1];
          if (org !== undefined && Number(value) === 1) leading.push(org);
        }
        return [r.name, leading.sort()];
      }),
    );
  }

  /** Who holds each shard's lease right now, per the lease space ("" = released or absent). */
  leaseHolders(): Map<string, string> {
    return new Map(this.shards.map((shard) => [shard, this.#holderOf(shard)]));
  }

  #holderOf(shard: string): string {
    if (this.k8s) {
      const lease = this.k8s.lease(NAMESPACE, `${LEASE_NAME}-${shard}`);
      const holder = (lease?.spec as { holderIdentity?: unknown } | null | undefined)?.holderIdentity;
      return typeof holder === "string" ? holder : "";
    }
    const object = this.s3.getObject(BUCKET, `${LEASE_KEY}/${shard}`);
    if (!object) return "";
    const doc = JSON.parse(object.bytes.toString("utf8")) as { holder?: unknown };
    return typeof doc.holder === "string" ? doc.holder : "";
  }

  /** Every lease the space holds (shards and members) with its holder: all "" once everyone released. */
  allLeaseHolders(): Record<string, string> {
    if (this.k8s) {
      const out: Record<string, string> = {};
      for (const w of this.k8s.writes) {
        if (w.namespace !== NAMESPACE || w.name in out) continue;
        const lease = this.k8s.lease(NAMESPACE, w.name);
        const holder = (lease?.spec as { holderIdentity?: unknown } | null | undefined)?.holderIdentity;
        out[w.name] = typeof holder === "string" ? holder : "";
      }
      return out;
    }
    const out: Record<string, string> = {};
    for (const w of this.s3.writes) {
      if (!w.key.startsWith(`${LEASE_KEY}/`) || w.key in out) continue;
      const object = this.s3.getObject(BUCKET, w.key);
      const holder = object ? (JSON.parse(object.bytes.toString("utf8")) as { holder?: unknown }).holder : "";
      out[w.key] = typeof holder === "string" ? holder : "";
    }
    return out;
  }

  /** Whether the membership lease of `identity` still exists in the lease space. */
  leaseExists(role: "member", identity: string): boolean {
    if (this.k8s) return this.k8s.lease(NAMESPACE, `${LEASE_NAME}-${role}-${identity}`) !== undefined;
    return this.s3.getObject(BUCKET, `${LEASE_KEY}/members/${identity}`) !== undefined;
  }

  /** Every successful shard lease write, in order. */
  leaseWrites(): ShardLeaseWrite[] {
    return this.k8s
      ? k8sLeaseWrites(this.k8s.writes, LEASE_NAME, this.shards)
      : s3LeaseWrites(this.s3.writes, LEASE_KEY, this.shards);
  }

  /** No shard ever had two replicas committing, judged from the recorded commits and lease writes. */
  /** Returns how much it checked: commits and lease writes, and the epochs each shard went through. */
  assertOneCommitterPerShard(): { commits: number; leaseWrites: number; epochs: Record<string, number[]> } {
    const commits = s3Commits(this.s3.writes, STATE_KEY, this.shards);
    const leases = this.leaseWrites();
    assertOneCommitterPerShard(commits, leases);
    const epochs: Record<string, number[]> = {};
    for (const c of commits) {
      const seen = (epochs[c.shard] ??= []);
      if (!seen.includes(c.epoch)) seen.push(c.epoch);
    }
    return { commits: commits.length, leaseWrites: leases.length, epochs };
  }

  /** Every org publishes `perTick` events per topic every 100 ms from now on. */
  startTraffic(perTick = 5): void {
    const timer = setInterval(() => {
      this.world.publish(perTick);
    }, 100);
    this.#stopPublishing = () => {
      clearInterval(timer);
    };
  }

  /** Stops publishing and waits until Loki holds every event of every org. */
  async drain(): Promise<void> {
    this.#stopPublishing();
    await waitFor(() => this.world.totals().missing === 0, 60_000, "every org's events in Loki", 250);
  }

  /** Waits until `more` new distinct events reached Loki (from any org). */
  async streamsOn(more: number, who: string): Promise<void> {
    const from = this.world.totals().delivered;
    await waitFor(() => this.world.totals().delivered >= from + more, 30_000, `${who} to stream on`, 250);
  }

  assertNothingLost(): void {
    const lost: string[] = [];
    for (const [org, topics] of Object.entries(this.world.stats()))
      for (const [topic, s] of Object.entries(topics)) {
        if (s.missing > 0) lost.push(`${org} ${topic}: ${s.missing} of ${s.emitted} missing`);
        if (s.misfiled > 0) lost.push(`${org} ${topic}: ${s.misfiled} lines under another org's label`);
      }
    assert.deepEqual(lost, [], "events lost or misfiled");
  }

  /** SIGTERM; a clean stop exits 0 within 20 s. */
  async stop(r: Replica): Promise<void> {
    r.kill("SIGTERM");
    const exit = await Promise.race([r.exited, delay(20_000, "still running")]);
    assert.deepEqual(exit, { code: 0, signal: null }, `${r.name}'s exit after SIGTERM:\n${r.tail()}`);
  }
}

/** A process's CPU seconds (user + system) and resident set, from /proc (Linux). */
export function procSample(pid: number): { cpuS: number; rssMiB: number } {
  // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const ticks = Number(fields[11]) + Number(fields[12]);
  const rssKiB = Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1] ?? 0);
  return { cpuS: ticks / 100, rssMiB: Math.round(rssKiB / 1024) };
}

export interface SteadyCost {
  seconds: number;
  /** Distinct events Loki accepted per second in the window, all replicas together. */
  eps: number;
  /** CPU cores all replicas used per 1,000 events/s (Pub/Sub in, Loki out, S3 checkpoints). */
  coresPer1kEps: number;
  /** Each replica's resident set at the end of the window, by name, with the orgs it held. */
  rss: Record<string, { mib: number; orgs: number }>;
}

/** Measures the live replicas' CPU and RSS over `ms` of steady traffic (real time: real processes). */
export async function steadyCost(rig: ShardRig, ms: number): Promise<SteadyCost> {
  const alive = rig.alive;
  const cpu0 = alive.map((r) => procSample(r.child.pid!).cpuS);
  const events0 = rig.world.totals().delivered;
  const t0 = performance.now();
  await delay(ms);
  const seconds = (performance.now() - t0) / 1000;
  const after = alive.map((r) => procSample(r.child.pid!));
  const held = await rig.held();
  const cores = after.reduce((sum, a, i) => sum + a.cpuS - cpu0[i]!, 0) / seconds;
  const eps = (rig.world.totals().delivered - events0) / seconds;
  return {
    seconds: Math.round(seconds * 10) / 10,
    eps: Math.round(eps),
    coresPer1kEps: Math.round((cores / (eps / 1000)) * 1000) / 1000,
    rss: Object.fromEntries(
      alive.map((r, i) => [r.name, { mib: after[i]!.rssMiB, orgs: held.get(r.name)?.length ?? 0 }]),
    ),
  };
}

/** Polls the replicas' /statusz until `ok` holds for what they hold; returns when it first did. */
export async function untilHeld(
  rig: ShardRig,
  ok: (held: Map<string, string[]>) => boolean,
  ms: number,
  what: string,
): Promise<{ at: number; held: Map<string, string[]> }> {
  const deadline = Date.now() + ms;
  for (;;) {
    const last = await rig.held();
    if (ok(last)) return { at: Date.now(), held: last };
    if (Date.now() > deadline) {
      const tails = rig.alive.map((r) => `--- ${r.name}:\n${r.tail(15)}`).join("\n");
      throw new Error(
        `timed out after ${ms} ms waiting for ${what}; replicas hold ${JSON.stringify(Object.fromEntries(last))}, ` +
          `leases ${JSON.stringify(Object.fromEntries(rig.leaseHolders()))}\n${tails}`,
      );
    }
    await delay(100);
  }
}

/** Every shard held exactly once among the live replicas, each holding `each` (or the balanced split). */
export function balanced(rig: ShardRig, held: Map<string, string[]>, each?: number): boolean {
  const all = [...held.values()].flat();
  if (all.length !== rig.shards.length || new Set(all).size !== all.length) return false;
  const counts = [...held.values()].map((s) => s.length);
  if (each !== undefined) return counts.every((n) => n === each);
  return Math.max(...counts) - Math.min(...counts) <= 1;
}

export interface ShardingFigures {
  /** Three replicas started → every one holds its two shards. */
  startToBalancedMs: number;
  /** kill -9 → the last of the killed replica's shards is held by a live replica (its lease). */
  killToAllHeldMs: number;
  /**
   * Per moved shard: the old holder's release write (or the new holder becoming a member, if later) →
   * the new holder's claim write.
   */
  handOverGapsMs: number[];
  /** 4th replica started → every replica holds its fair share again. */
  joinToBalancedMs: number;
  duplicates: number;
  /** CPU and RSS of the three replicas at steady state (2 orgs each), after the backlog drained. */
  steady: SteadyCost;
  /** The same for the two survivors of the kill (3 orgs each). */
  steadyAfterKill: SteadyCost;
}

/**
 * 3 replicas × `orgs` shards: balanced at 2 each; kill -9 one: its shards held elsewhere within
 * ttl + renew and nothing lost; a 4th joins: shards move to it by clean release (no ttl wait); SIGTERM
 * all: every lease released. No shard ever has two replicas committing.
 */
export async function shardingProof(t: TestContext, rig: ShardRig): Promise<ShardingFigures> {
  const each = rig.shards.length / 3;
  const startedAt = Date.now();
  await Promise.all(["replica-a", "replica-b", "replica-c"].map((n) => rig.spawn(n)));
  const steady = await untilHeld(rig, (h) => balanced(rig, h, each), 60_000, `${each} shards per replica`);
  // What each replica says (/statusz), what it exports (sf2loki_shard_leader{org}) and who the lease
  // space names agree.
  const holders = rig.leaseHolders();
  for (const [name, shards] of steady.held)
    for (const shard of shards)
      assert.equal(holders.get(shard), name, `${shard}'s lease vs ${name}'s /statusz`);
  assert.deepEqual(
    Object.fromEntries(await rig.shardLeaderGauges()),
    Object.fromEntries(steady.held),
    "sf2loki_shard_leader{org} = 1 exactly where /statusz says the shard is held",
  );
  rig.startTraffic();
  await rig.streamsOn(3000, "the three replicas");
  // Caught up: what is missing is about one second of traffic (6 orgs x 3 topics x 50 events/s).
  await waitFor(() => rig.world.totals().missing < 1000, 60_000, "the backlog to drain", 250).catch(
    (err: unknown) => {
      throw new Error(`${(err as Error).message}: ${JSON.stringify(rig.world.totals())}`, { cause: err });
    },
  );
  const steadyFigures = await steadyCost(rig, 5000);

  // kill -9 one replica; its shards must be held by the survivors within ttl + renew.
  const victim = rig.replica("replica-b");
  const orphans = steady.held.get(victim.name) ?? [];
  assert.equal(orphans.length, each, `${victim.name} held ${orphans.join(",")}`);
  const killedAt = Date.now();
  victim.kill("SIGKILL");
  await victim.exited;
  const survivors = new Set(["replica-a", "replica-c"]);
  await waitFor(
    () => {
      const holders = rig.leaseHolders();
      return orphans.every((s) => survivors.has(holders.get(s) ?? ""));
    },
    TTL_MS + RENEW_MS + 10_000,
    `the survivors to take ${orphans.join(", ")}`,
    20,
  );
  const killToAllHeldMs = Date.now() - killedAt;
  await untilHeld(rig, (h) => balanced(rig, h), 10_000, "the survivors to run every shard");
  await rig.streamsOn(3000, "the survivors");
  const afterKillFigures = await steadyCost(rig, 5000);

  // A 4th replica joins: two shards move to it, each by a clean release (no ttl wait).
  const before = rig.leaseWrites().length;
  const joinedAt = Date.now();
  const d = await rig.spawn("replica-d");
  const rejoined = await untilHeld(rig, (h) => balanced(rig, h, each), 60_000, "the 4th replica's share");
  assert.equal(rejoined.held.get(d.name)?.length, each, `${d.name} holds its share`);
  const joinWrites = rig.leaseWrites().slice(before);
  // d can claim nothing before it is a member (its first lease, written once its process is up): a
  // shard released earlier waited for d's start (seconds on a loaded host), not for a ttl.
  // (Lease writes are stamped with performance.now(), log lines with the wall clock.)
  const memberAt = d.logTime("acquired lease", joinedAt);
  const handOverGapsMs = handOvers(
    joinWrites,
    d.name,
    memberAt === undefined ? 0 : memberAt - performance.timeOrigin,
  );
  assert.equal(handOverGapsMs.length, each, `shards moved to ${d.name}: ${handOverGapsMs.length}`);
  await rig.streamsOn(3000, "the three live replicas");

  await rig.drain();
  const duplicates = rig.world.totals().duplicates;
  const stoppedAt = new Map<string, string>();
  for (const r of rig.alive) {
    stoppedAt.set(r.name, new Date().toISOString());
    await rig.stop(r);
  }

  const figures: ShardingFigures = {
    startToBalancedMs: steady.at - startedAt,
    killToAllHeldMs,
    handOverGapsMs,
    joinToBalancedMs: rejoined.at - joinedAt,
    duplicates,
    steady: steadyFigures,
    steadyAfterKill: afterKillFigures,
  };
  t.diagnostic(`${rig.kind} sharding figures: ${JSON.stringify(figures)}`);

  rig.assertNothingLost();
  // Taken as soon as the dead member's lease and the shard's lease have both gone stale: a ttl, plus
  // up to a renew interval to notice; 1 s covers listing and scheduling on a loaded 2-core host.
  assert.ok(
    killToAllHeldMs <= TTL_MS + RENEW_MS + 1000,
    `kill -9 → its shards held elsewhere took ${killToAllHeldMs} ms`,
  );
  // A clean release is claimed within a renew interval, never after a ttl.
  for (const gap of handOverGapsMs)
    assert.ok(
      gap < TTL_MS,
      `a hand-over waited ${gap} ms (a ttl is ${TTL_MS}); lease changes since the join:\n` +
        `${leaseChanges(joinWrites)}\n${d.name}'s log ends:\n${d.tail(25)}`,
    );
  // Every shard lease and every stopped replica's membership lease is released; the killed replica's
  // membership lease, which it could not release, was removed by the survivors once it went stale.
  const unreleased = Object.entries(rig.allLeaseHolders()).filter(([, h]) => h !== "");
  const holderLogs = [...new Set(unreleased.map(([, h]) => h))]
    .map((h) => rig.replicas.find((r) => r.name === h))
    .map((r) => (r ? `--- ${r.name} (stopped at ${stoppedAt.get(r.name) ?? "?"}):\n${r.tail(30)}` : ""))
    .join("\n");
  assert.deepEqual(unreleased, [], `leases still held after every replica stopped\n${holderLogs}`);
  assert.equal(
    rig.leaseExists(`member`, victim.name),
    false,
    `${victim.name}'s membership lease was left behind`,
  );
  const checked = rig.assertOneCommitterPerShard();
  t.diagnostic(`one committer per shard, checked over ${JSON.stringify(checked)}`);
  return figures;
}

/** One line per change of holder or epoch (renewals collapsed), timed from the first write. */
function leaseChanges(writes: readonly ShardLeaseWrite[]): string {
  const t0 = writes[0]?.at ?? 0;
  return writes
    .filter(
      (w, i) =>
        !writes.slice(0, i).some((p) => p.shard === w.shard && p.holder === w.holder && p.epoch === w.epoch),
    )
    .map((w) => `+${(w.at - t0).toFixed(0)} ms ${w.shard} ${w.holder || "(released)"} epoch ${w.epoch}`)
    .join("\n");
}

/**
 * For each shard that moved to `to` in `writes`: the gap between the previous holder's release (a
 * write with no holder) and `to`'s claim. A move without a release before it fails: that is a ttl
 * takeover, not a hand-over.
 */
function handOvers(writes: readonly ShardLeaseWrite[], to: string, memberSince: number): number[] {
  // Its first write to each shard is the claim; later ones are renewals.
  const claims = new Map<string, ShardLeaseWrite>();
  for (const w of writes) if (w.holder === to && !claims.has(w.shard)) claims.set(w.shard, w);
  return [...claims.values()].map((claim) => {
    const released = writes
      .filter((w) => w.shard === claim.shard && w.at < claim.at && w.holder === "")
      .at(-1);
    assert.ok(released, `${to} took ${claim.shard} without a release before it (a ttl takeover)`);
    return claim.at - Math.max(released.at, memberSince);
  });
}

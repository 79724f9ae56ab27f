// The sharding behaviours every lease backend must show, on virtual time: 3 replicas x 6 orgs converge
// to 2 each; a dead replica's shards are taken within ttl + renew; a 4th replica gets its share by clean
// hand-over (no ttl wait); a partitioned replica fences every shard it holds before anyone else can
// take one; a stop releases every shard lease and the membership lease.
import assert from "node:assert/strict";
import { it } from "node:test";
import { ORGS, RENEW, TTL, type ShardReplica, type ShardSim } from "./sharding-harness.ts";

export interface ShardFixture {
  sim: ShardSim;
  /** The stored holder of one org's shard lease, or of a replica's membership lease. */
  shardHolder(org: string): string | undefined;
  memberHolder(replica: string): string | undefined;
  /** Makes a replica's lease writes fail (and hang) from now on. */
  partition(replica: ShardReplica): void;
  /** Rewrites one shard's lease behind everyone's back: held by `holder`, a newer epoch, just renewed. */
  steal(org: string, holder: string): void;
}

/** Measured figures, printed when SF2LOKI_SHARD_FIGURES is set. */
function report(line: string): void {
  if (process.env.SF2LOKI_SHARD_FIGURES) console.log(`# figure: ${line}`);
}

export function shardingScenarios(fixture: () => ShardFixture): void {
  async function threeConverged(f: ShardFixture): Promise<ShardReplica[]> {
    const rs = ["r1", "r2", "r3"].map((n) => f.sim.replica(n));
    const took = await f.sim.until(
      () => f.sim.balanced(rs, [2, 2, 2]),
      "3 replicas converge to 2 shards each",
    );
    report(`3x6 converged after ${took} virtual ms, ${f.sim.log.length} acquire/lose events`);
    // And it stays put: no shard moves once balanced.
    const before = f.sim.log.length;
    await f.sim.run(2 * TTL);
    assert.equal(f.sim.log.length, before, `no moves once balanced: ${f.sim.log.slice(before).join(" ")}`);
    return rs;
  }

  it("3 replicas x 6 orgs converge to 2 shards each, every shard held once", async () => {
    const f = fixture();
    const rs = await threeConverged(f);
    for (const r of rs) {
      assert.deepEqual([...r.manager.members], ["r1", "r2", "r3"]);
      assert.equal(r.manager.fairShare, 2);
      assert.ok(r.manager.ready(), `${r.name} ready`);
    }
    for (const org of ORGS) assert.equal(f.shardHolder(org), f.sim.holders().get(org));
  });

  it("replicas started one by one converge too, by clean hand-overs only", async () => {
    const f = fixture();
    const rs = [f.sim.replica("r1")];
    await f.sim.until(() => rs[0]!.held().length === 6, "a lone replica holds every shard");
    rs.push(f.sim.replica("r2"));
    await f.sim.until(() => f.sim.balanced(rs, [3, 3]), "2 replicas split 3 and 3", TTL);
    rs.push(f.sim.replica("r3"));
    const took = await f.sim.until(() => f.sim.balanced(rs, [2, 2, 2]), "3 replicas split 2, 2, 2", TTL);
    report(`staggered start: the 3rd replica balanced after ${took} virtual ms`);
    const losses = rs.flatMap((r) => r.events.filter((e) => e.startsWith("-")));
    assert.ok(
      losses.every((e) => e.endsWith(":stopping")),
      `only clean hand-overs: ${losses.join(" ")}`,
    );
    assert.equal(losses.length, 3 + 2, "the minimum: 3 shards to r2, then 1 each from r1 and r2 to r3");
  });

  it("a replica that dies (stops renewing) has its shards taken within ttl + renew", async () => {
    const f = fixture();
    const [r1, r2, r3] = await threeConverged(f);
    const orphaned = r3!.held();
    const seen = [r1!.events.length, r2!.events.length];
    r3!.clock.frozen = true;
    r3!.tracker.hanging = true;
    const took = await f.sim.until(
      () => f.sim.balanced([r1!, r2!], [3, 3]),
      "the survivors take the dead replica's shards",
      3 * TTL,
    );
    report(`dead replica's shards taken after ${took} virtual ms (ttl ${TTL}, renew ${RENEW})`);
    assert.ok(took <= TTL + RENEW, `taken after ${took} ms; want <= ttl + renew = ${TTL + RENEW}`);
    for (const org of orphaned) assert.notEqual(f.sim.holders().get(org), "r3");
    // Only the orphans moved: the survivors kept what they held.
    assert.equal(r1!.events.slice(seen[0]).filter((e) => e.startsWith("-")).length, 0);
    assert.equal(r2!.events.slice(seen[1]).filter((e) => e.startsWith("-")).length, 0);
  });

  it("a 4th replica gets its share by clean hand-over, without waiting for a ttl, moving one shard", async () => {
    const f = fixture();
    const rs = await threeConverged(f);
    const before = f.sim.holders();
    const seen = new Map(rs.map((r) => [r.name, r.events.length]));
    const r4 = f.sim.replica("r4");
    const took = await f.sim.until(
      () => f.sim.balanced([...rs, r4], [2, 2, 1, 1]),
      "the 4th replica gets its share",
      3 * TTL,
    );
    report(`4th replica got its share after ${took} virtual ms (ttl ${TTL})`);
    assert.ok(took < TTL, `moved after ${took} ms; a clean hand-over must not wait a ttl (${TTL})`);
    const after = f.sim.holders();
    const moved = ORGS.filter((o) => before.get(o) !== after.get(o));
    assert.equal(moved.length, 1, `exactly one shard moves (the minimum): ${moved.join()}`);
    const from = rs.find((r) => r.name === before.get(moved[0]!))!;
    assert.deepEqual(
      from.events.slice(seen.get(from.name)).filter((e) => e.startsWith("-")),
      [`-${moved[0]}:stopping`],
      "released cleanly: drained while still leading",
    );
    assert.equal(from.stores.get(moved[0]!)!.doc.get("drained"), from.name, "the drain's commit landed");
    const handover = r4.when(`+${moved[0]}`)! - from.when(`-${moved[0]}:stopping`)!;
    report(`4th replica: acquired ${handover} virtual ms after the hand-over began`);
    assert.ok(
      handover <= RENEW / 2 + 100,
      `taken ${handover} ms after the hand-over; the new owner polls every renew / 2`,
    );
    for (const r of [...rs, r4]) assert.equal(r.manager.members.length, 4);
  });

  it("a replacement for a dead replica is handed its share without waiting out the dead one's membership", async () => {
    const f = fixture();
    const [r1, r2, r3] = await threeConverged(f);
    r3!.clock.frozen = true;
    r3!.tracker.hanging = true;
    await f.sim.until(() => f.sim.balanced([r1!, r2!], [3, 3]), "the survivors take r3's shards", 3 * TTL);
    // r3's membership lease is still there, unchanged: the replacement has never seen it renew.
    assert.equal(f.memberHolder("r3"), "r3");
    const r4 = f.sim.replica("r4");
    const took = await f.sim.until(
      () => f.sim.balanced([r1!, r2!, r4], [2, 2, 2]),
      "r4 gets its share",
      3 * TTL,
    );
    report(`replacement replica balanced ${took} virtual ms after it started`);
    assert.ok(took < TTL, `balanced ${took} ms after the replacement started; it must not wait a ttl for r3`);
    assert.deepEqual([...r4.manager.members], ["r1", "r2", "r4"]);
  });

  it("a partitioned replica fences every shard it holds before its leases expire for the others", async () => {
    const f = fixture();
    const [r1, r2, r3] = await threeConverged(f);
    const mine = r3!.held();
    const fencedAt = new Map<string, number>();
    const takenAt = new Map<string, number>();
    let now = 0;
    f.sim.onStep = async () => {
      now += 100;
      for (const org of mine) {
        if (!fencedAt.has(org) && !(await r3!.canCommit(org))) fencedAt.set(org, now);
        if (!takenAt.has(org) && (r1!.held().includes(org) || r2!.held().includes(org)))
          takenAt.set(org, now);
      }
      // Never two writers for one shard at any instant.
      for (const org of ORGS) {
        const writers = [];
        for (const r of [r1!, r2!, r3!]) {
          try {
            r.manager.coordinator(org).checkFence();
            writers.push(r.name);
          } catch {
            // fenced
          }
        }
        assert.ok(writers.length <= 1, `${org} has writers ${writers.join(",")} at +${now} ms`);
      }
    };
    f.partition(r3!);
    await f.sim.until(
      () => mine.every((o) => takenAt.has(o)),
      "the others take the partitioned shards",
      3 * TTL,
    );
    report(
      `partition: fenced at ${[...fencedAt.values()].join(",")} ms, taken at ${[...takenAt.values()].join(",")} ms`,
    );
    for (const org of mine) {
      assert.ok(fencedAt.has(org), `${org} fenced on r3`);
      assert.ok(
        fencedAt.get(org)! < takenAt.get(org)!,
        `${org} fenced at ${fencedAt.get(org)} before taken at ${takenAt.get(org)}`,
      );
      assert.ok(fencedAt.get(org)! <= TTL - RENEW / 2 + 100, `${org} fenced by ttl - renew/2`);
    }
    f.sim.onStep = undefined;
  });

  it("a replica that loses one shard is fenced for that shard only and keeps committing the others", async () => {
    const f = fixture();
    const rs = await threeConverged(f);
    const r = rs[0]!;
    const [stolen, kept] = r.held();
    const seen = rs.map((x) => x.events.length);
    f.steal(stolen!, "intruder");
    await f.sim.until(() => !r.held().includes(stolen!), "the stolen shard is lost", TTL);
    assert.equal(await r.canCommit(stolen!), false, "the lost shard's store refuses writes");
    assert.equal(await r.canCommit(kept!), true, "the other shard's store still takes writes");
    assert.deepEqual(
      r.events.slice(seen[0]).filter((e) => e.startsWith("-")),
      [`-${stolen}:lost`],
      "only the stolen shard's pipeline stopped",
    );
    rs.slice(1).forEach((other, i) => {
      assert.equal(other.events.slice(seen[i + 1]).filter((e) => e.startsWith("-")).length, 0);
    });
  });

  it("the membership leases of departed replicas are removed: released after a ttl, silent after three", async () => {
    const f = fixture();
    const [r1, r2, r3] = await threeConverged(f);
    r3!.ctl.abort();
    await f.sim.until(() => r3!.finished, "r3 stops");
    assert.equal(f.memberHolder("r3"), "", "released on stop");
    await f.sim.until(
      () => f.memberHolder("r3") === undefined,
      "r3's released membership lease removed",
      2 * TTL,
    );
    r2!.clock.frozen = true;
    r2!.tracker.hanging = true;
    const took = await f.sim.until(
      () => f.memberHolder("r2") === undefined,
      "silent r2's membership lease removed",
      5 * TTL,
    );
    // Its last renewal came up to one renew interval before it froze; three ttl count from there.
    assert.ok(took >= 3 * TTL - RENEW, `removed after ${took} ms; a silent member keeps its lease for 3 ttl`);
    assert.equal(f.memberHolder("r1"), "r1", "the live member's lease stays");
    await f.sim.until(() => r1!.held().length === 6, "r1 holds every shard");
  });

  it("a stop drains and releases every shard lease, then the membership lease", async () => {
    const f = fixture();
    const rs = await threeConverged(f);
    const seen = rs.map((r) => r.events.length);
    await f.sim.stopAll();
    for (const org of ORGS) assert.equal(f.shardHolder(org), "", `${org} released`);
    rs.forEach((r, i) => {
      assert.equal(f.memberHolder(r.name), "", `${r.name}'s membership released`);
      assert.deepEqual(
        r.events
          .slice(seen[i])
          .filter((e) => e.startsWith("-"))
          .map((e) => e.split(":")[1]),
        ["stopping", "stopping"],
      );
    });
  });
}

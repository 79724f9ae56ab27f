// The assignment every replica computes alone: deterministic, balanced, sticky, and minimal-move.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { assignShards, desiredShards, fairShare } from "../../src/coordinate/sharding/rendezvous.ts";
import { dnsSafe, k8sMemberLeaseName, k8sShardLeaseName } from "../../src/coordinate/sharding/names.ts";

const names = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);

function loads(a: Map<string, string>): number[] {
  const by = new Map<string, number>();
  for (const m of a.values()) by.set(m, (by.get(m) ?? 0) + 1);
  return [...by.values()].sort((x, y) => x - y);
}

function moved(a: Map<string, string>, b: Map<string, string>): string[] {
  return [...a.keys()].filter((s) => a.get(s) !== b.get(s));
}

describe("rendezvous shard assignment", () => {
  it("is the same whatever order the shards and members come in", () => {
    const shards = names("org", 9);
    const members = names("pod", 4);
    const a = assignShards(shards, members);
    const b = assignShards([...shards].reverse(), [
      members[2]!,
      members[0]!,
      members[3]!,
      members[1]!,
      members[0]!,
    ]);
    assert.deepEqual([...a].sort(), [...b].sort());
    assert.equal(a.size, 9);
  });

  it("balances to floor or ceil of shards / members", () => {
    for (const [s, m] of [
      [6, 3],
      [6, 4],
      [7, 3],
      [2, 5],
      [100, 7],
    ] as const) {
      const a = assignShards(names("org", s), names("pod", m));
      const l = loads(a);
      assert.ok(
        l.every((n) => n === Math.floor(s / m) || n === Math.ceil(s / m)),
        `${s}/${m}: ${l.join()}`,
      );
      assert.ok(Math.max(...l) <= fairShare(s, m));
    }
  });

  it("is a fixed point: replicas holding their assignment are never told to move", () => {
    for (let seed = 0; seed < 50; seed++) {
      const shards = names(`org${seed}`, 6);
      const members = names(`pod${seed}`, 3);
      const a = assignShards(shards, members);
      assert.deepEqual([...assignShards(shards, members, a)].sort(), [...a].sort());
    }
  });

  it("a join moves exactly the newcomer's share, a leave exactly the leaver's shards (200 random fleets)", () => {
    let joinMoves = 0;
    let moduloMoves = 0;
    for (let seed = 0; seed < 200; seed++) {
      const shards = names(`org${seed}`, 100);
      const members = names(`pod${seed}`, 10);
      const before = assignShards(shards, members);
      const joined = assignShards(shards, [...members, `pod${seed}-new`], before);
      const m = moved(before, joined);
      assert.equal(m.length, [...joined.values()].filter((o) => o === `pod${seed}-new`).length);
      assert.ok(
        m.every((s) => joined.get(s) === `pod${seed}-new`),
        "every moved shard goes to the newcomer",
      );
      assert.equal(m.length, 9, "100 shards over 11 members: the newcomer's floor share");
      joinMoves += m.length;
      // What hash-mod-N would have moved, for the ratio.
      const mod = (s: string, n: number): number => Number.parseInt(s.split("-")[1]!, 10) % n;
      moduloMoves += shards.filter((s) => mod(s, 10) !== mod(s, 11)).length;

      const gone = members[seed % 10]!;
      const left = assignShards(
        shards,
        members.filter((x) => x !== gone),
        before,
      );
      const lm = moved(before, left);
      assert.deepEqual(lm.sort(), shards.filter((s) => before.get(s) === gone).sort());
    }
    assert.ok(joinMoves * 5 < moduloMoves, `rendezvous ${joinMoves} vs modulo ${moduloMoves} moves`);
  });

  it("the 6-org, 3-to-4 replica case moves one shard; 4-to-3 moves only the leaver's", () => {
    const orgs = ["acme", "globex", "initech", "umbrella", "hooli", "stark"];
    const three = assignShards(orgs, ["r1", "r2", "r3"]);
    assert.deepEqual(loads(three), [2, 2, 2]);
    const four = assignShards(orgs, ["r1", "r2", "r3", "r4"], three);
    assert.deepEqual(loads(four), [1, 1, 2, 2]);
    assert.equal(moved(three, four).length, 1);
    assert.deepEqual(desiredShards(orgs, ["r1", "r2", "r3", "r4"], "r4", three).size, 1);
  });

  it("shards held by a non-member are free; nothing is assigned without members", () => {
    const orgs = ["a", "b", "c"];
    const a = assignShards(orgs, ["x"], new Map([["a", "ghost"]]));
    assert.deepEqual([...a.values()], ["x", "x", "x"]);
    assert.equal(assignShards(orgs, []).size, 0);
  });
});

describe("shard lease names", () => {
  it("keeps DNS-1123 names and sanitises others with a hash, so two orgs never share a Lease", () => {
    assert.equal(k8sShardLeaseName("sf2loki-leader", "acme"), "sf2loki-leader-acme");
    const a = k8sShardLeaseName("sf2loki-leader", "Acme_EU");
    const b = k8sShardLeaseName("sf2loki-leader", "acme-eu");
    assert.match(a, /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/);
    assert.notEqual(a, b);
    assert.match(k8sMemberLeaseName("sf2loki-leader", "pod-0"), /^sf2loki-leader-member-pod-0$/);
    assert.ok(dnsSafe("x".repeat(300)).length <= 253);
    assert.ok(dnsSafe("Y".repeat(100), 63).length <= 63);
  });
});

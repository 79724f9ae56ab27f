// Who should hold which shard, computed the same way by every replica from the same two lists (the
// shards in the config, the live members from the lease objects), with no coordinator in the middle.
//
// Rendezvous (highest-random-weight) hashing ranks the members for every shard by hash(member, shard).
// Plain HRW can give one member far more than its share, so every member gets a quota (floor or ceil of
// shards / members, the ceil going to the members already holding the most) and the assignment is:
// 1. each live member keeps what it holds, up to its quota (its highest-weight shards first);
// 2. every other shard goes to the highest-weight member with quota left.
// With nothing held yet (a cold start) that is the capacity-bounded HRW matching, the same for every
// replica; afterwards a join moves exactly the shards the newcomer's quota needs, and a leave moves
// exactly the departed member's shards: the minimum either way. Holders come from the shard leases
// every replica reads anyway, so all replicas compute the same answer once their reads agree.
import { createHash } from "node:crypto";

/** The pair's weight: 48 bits of SHA-256, so it is the same on every platform and Node version. */
export function rendezvousWeight(member: string, shard: string): number {
  return createHash("sha256").update(member).update("\0").update(shard).digest().readUIntBE(0, 6);
}

/** ceil(shards / members): the most shards any one live member should hold. */
export function fairShare(shards: number, members: number): number {
  if (members <= 0) return shards;
  return Math.ceil(shards / members);
}

/**
 * shard -> member. Empty when there are no members. `holders`: who holds each shard now (shards held by
 * a non-member are free). Inputs may repeat or come in any order.
 */
export function assignShards(
  shards: readonly string[],
  members: readonly string[],
  holders: ReadonlyMap<string, string | undefined> = new Map(),
): Map<string, string> {
  const s = [...new Set(shards)].sort(cmp);
  const m = [...new Set(members)].sort(cmp);
  const out = new Map<string, string>();
  if (m.length === 0) return out;
  // Each pair hashed once per call: the sorts below compare the same pairs many times.
  const weights = new Map<string, number>();
  const weight = (member: string, shard: string): number => {
    const key = `${member}\0${shard}`;
    let w = weights.get(key);
    if (w === undefined) weights.set(key, (w = rendezvousWeight(member, shard)));
    return w;
  };

  const held = new Map<string, string[]>(m.map((member) => [member, []]));
  for (const shard of s) {
    const holder = holders.get(shard);
    if (holder !== undefined) held.get(holder)?.push(shard);
  }
  // Quotas: the ceil goes to the members holding the most (fewest moves), ties by a per-member hash.
  const base = Math.floor(s.length / m.length);
  const extra = s.length % m.length;
  const byLoad = [...m].sort(
    (a, b) => held.get(b)!.length - held.get(a)!.length || weight(b, "") - weight(a, "") || cmp(a, b),
  );
  const quota = new Map(byLoad.map((member, i) => [member, base + (i < extra ? 1 : 0)]));

  // 1. Keep what is held, up to the quota.
  for (const member of m) {
    const mine = held.get(member)!.sort((a, b) => weight(member, b) - weight(member, a) || cmp(a, b));
    for (const shard of mine.slice(0, quota.get(member))) out.set(shard, member);
  }
  // 2. The rest by weight, highest pair first, into the quota left.
  const load = new Map<string, number>(m.map((member) => [member, 0]));
  for (const member of out.values()) load.set(member, load.get(member)! + 1);
  const pairs: { shard: string; member: string; weight: number }[] = [];
  for (const shard of s) {
    if (out.has(shard)) continue;
    for (const member of m) pairs.push({ shard, member, weight: weight(member, shard) });
  }
  pairs.sort((a, b) => b.weight - a.weight || cmp(a.member, b.member) || cmp(a.shard, b.shard));
  for (const { shard, member } of pairs) {
    if (out.has(shard) || load.get(member)! >= quota.get(member)!) continue;
    out.set(shard, member);
    load.set(member, load.get(member)! + 1);
  }
  return out;
}

/** The shards `member` should hold. */
export function desiredShards(
  shards: readonly string[],
  members: readonly string[],
  member: string,
  holders?: ReadonlyMap<string, string | undefined>,
): Set<string> {
  const mine = new Set<string>();
  for (const [shard, owner] of assignShards(shards, members, holders)) if (owner === member) mine.add(shard);
  return mine;
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

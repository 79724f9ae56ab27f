// "No shard ever has two replicas committing", checked after the fact from what the emulators
// recorded: every checkpoint document write (with the `__fence_epoch__` inside its body and, where the
// rig can tell, its writer) and every shard lease write (holder and epoch), on one monotonic clock.
// A history is bad when, for one shard:
//   * stale-epoch: a commit lands with an epoch lower than one already committed;
//   * two-writers: two different writers commit under the same epoch;
//   * overlap: two terms' commits interleave (a term's first commit comes before the last commit of
//     an older term): two holders were committing in the same interval;
//   * unleased: a commit lands while the shard's lease (its last successful write before the commit)
//     is held by someone else, under another epoch, or released.
import assert from "node:assert/strict";
import type { RecordedLeaseWrite } from "./k8s-emulator.ts";
import type { S3Write } from "./s3-emulator.ts";

export interface ShardCommit {
  shard: string;
  /** The `__fence_epoch__` stamped in the written document. */
  epoch: number;
  /** Who wrote it, when the rig can tell (S3: the signing access key id). */
  writer?: string | undefined;
  /** Monotonic time the store applied it. */
  at: number;
}

export interface ShardLeaseWrite {
  shard: string;
  /** "" when the write released the lease. */
  holder: string;
  epoch: number;
  at: number;
}

export type ViolationKind = "stale-epoch" | "two-writers" | "overlap" | "unleased";

export interface Violation {
  shard: string;
  kind: ViolationKind;
  detail: string;
}

const byTime = <T extends { at: number }>(items: readonly T[]): T[] => [...items].sort((a, b) => a.at - b.at);
const who = (c: ShardCommit): string => c.writer ?? "?";

/** Every violation in the history (empty when no shard ever had two replicas committing). */
export function shardHistoryViolations(
  commits: readonly ShardCommit[],
  leases?: readonly ShardLeaseWrite[],
): Violation[] {
  const out: Violation[] = [];
  const shards = [...new Set(commits.map((c) => c.shard))].sort();
  for (const shard of shards) {
    const mine = byTime(commits.filter((c) => c.shard === shard));
    out.push(...staleEpochs(shard, mine), ...twoWriters(shard, mine), ...overlaps(shard, mine));
    if (leases) out.push(...unleased(shard, mine, byTime(leases.filter((l) => l.shard === shard))));
  }
  return out;
}

/** Fails with every violation listed; also fails on an empty history (a proof that saw nothing). */
export function assertOneCommitterPerShard(
  commits: readonly ShardCommit[],
  leases?: readonly ShardLeaseWrite[],
): void {
  assert.ok(commits.length > 0, "no shard checkpoint write was recorded");
  const found = shardHistoryViolations(commits, leases).map((v) => `${v.shard} ${v.kind}: ${v.detail}`);
  assert.deepEqual(found, [], "a shard had two replicas committing");
}

function staleEpochs(shard: string, commits: readonly ShardCommit[]): Violation[] {
  const out: Violation[] = [];
  let high: ShardCommit | undefined;
  for (const c of commits) {
    if (high && c.epoch < high.epoch) {
      out.push({
        shard,
        kind: "stale-epoch",
        detail: `epoch ${c.epoch} by ${who(c)} at ${c.at.toFixed(1)} after epoch ${high.epoch} by ${who(high)}`,
      });
    }
    if (!high || c.epoch > high.epoch) high = c;
  }
  return out;
}

function twoWriters(shard: string, commits: readonly ShardCommit[]): Violation[] {
  const writers = new Map<number, Set<string>>();
  for (const c of commits) {
    if (c.writer === undefined) continue;
    const set = writers.get(c.epoch) ?? new Set<string>();
    set.add(c.writer);
    writers.set(c.epoch, set);
  }
  return [...writers]
    .filter(([, set]) => set.size > 1)
    .map(([epoch, set]) => ({
      shard,
      kind: "two-writers" as const,
      detail: `epoch ${epoch} committed by ${[...set].sort().join(" and ")}`,
    }));
}

function overlaps(shard: string, commits: readonly ShardCommit[]): Violation[] {
  const terms = new Map<number, { first: ShardCommit; last: ShardCommit }>();
  for (const c of commits) {
    const term = terms.get(c.epoch);
    if (term) term.last = c;
    else terms.set(c.epoch, { first: c, last: c });
  }
  const ordered = [...terms].sort(([a], [b]) => a - b);
  const out: Violation[] = [];
  for (let i = 0; i < ordered.length; i++) {
    for (let j = i + 1; j < ordered.length; j++) {
      const [older, o] = ordered[i]!;
      const [newer, n] = ordered[j]!;
      if (n.first.at < o.last.at) {
        out.push({
          shard,
          kind: "overlap",
          detail:
            `epoch ${newer} (${who(n.first)}) committed from ${n.first.at.toFixed(1)} while epoch ${older} ` +
            `(${who(o.last)}) still committed until ${o.last.at.toFixed(1)}`,
        });
      }
    }
  }
  return out;
}

function unleased(
  shard: string,
  commits: readonly ShardCommit[],
  leases: readonly ShardLeaseWrite[],
): Violation[] {
  const out: Violation[] = [];
  let li = 0;
  let current: ShardLeaseWrite | undefined;
  for (const c of commits) {
    while (li < leases.length && leases[li]!.at <= c.at) current = leases[li++];
    const problem = !current
      ? "before any lease write"
      : current.holder === ""
        ? `after the lease was released (epoch ${current.epoch})`
        : current.epoch !== c.epoch
          ? `while the lease was at epoch ${current.epoch} (${current.holder})`
          : c.writer !== undefined && c.writer !== current.holder
            ? `while ${current.holder} held it`
            : undefined;
    if (problem !== undefined) {
      out.push({
        shard,
        kind: "unleased",
        detail: `epoch ${c.epoch} by ${who(c)} at ${c.at.toFixed(1)} ${problem}`,
      });
    }
  }
  return out;
}

// ---- from what the emulators recorded --------------------------------------------------------------

/** `sf2loki/state.json` + `org1` -> `sf2loki/state-org1.json`: the shard's own checkpoint document. */
export function shardStateKey(key: string, shard: string): string {
  const slash = key.lastIndexOf("/");
  const dot = key.lastIndexOf(".");
  return dot > slash ? `${key.slice(0, dot)}-${shard}${key.slice(dot)}` : `${key}-${shard}`;
}

/** The `__fence_epoch__` of a written checkpoint document, or undefined when it carries none. */
function fenceEpoch(bytes: Buffer): number | undefined {
  try {
    const raw = (JSON.parse(bytes.toString("utf8")) as Record<string, unknown>).__fence_epoch__;
    return raw === undefined ? undefined : Number(raw);
  } catch {
    return undefined;
  }
}

/**
 * Checkpoint commits per shard from the S3 emulator's writes: `stateKey` is the configured state key;
 * a write without an epoch (an unfenced store) counts as epoch -1, which fails every leased check.
 */
export function s3Commits(
  writes: readonly S3Write[],
  stateKey: string,
  shards: readonly string[],
): ShardCommit[] {
  const shardOf = new Map(shards.map((s) => [shardStateKey(stateKey, s), s]));
  return writes.flatMap((w) => {
    const shard = shardOf.get(w.key);
    if (shard === undefined) return [];
    return [{ shard, epoch: fenceEpoch(w.bytes) ?? -1, writer: w.writer, at: w.at }];
  });
}

/** Shard lease writes (`<prefix>/<org>`, JSON `{holder, epoch}`) from the S3 emulator's writes. */
export function s3LeaseWrites(
  writes: readonly S3Write[],
  prefix: string,
  shards: readonly string[],
): ShardLeaseWrite[] {
  const shardOf = new Map(shards.map((s) => [`${prefix}/${s}`, s]));
  return writes.flatMap((w) => {
    const shard = shardOf.get(w.key);
    if (shard === undefined) return [];
    try {
      const doc = JSON.parse(w.bytes.toString("utf8")) as { holder?: unknown; epoch?: unknown };
      return [
        {
          shard,
          holder: typeof doc.holder === "string" ? doc.holder : "",
          epoch: Number(doc.epoch),
          at: w.at,
        },
      ];
    } catch {
      return [];
    }
  });
}

/**
 * Shard lease writes from the k8s emulator: successful, persisted writes to `<name>-<org>` (membership
 * Leases excluded by name). A DELETE or a write without a holder is a release.
 */
export function k8sLeaseWrites(
  writes: readonly RecordedLeaseWrite[],
  leaseName: string,
  shards: readonly string[],
): ShardLeaseWrite[] {
  const shardOf = new Map(shards.map((s) => [`${leaseName}-${s}`, s]));
  return writes.flatMap((w) => {
    const shard = shardOf.get(w.name);
    if (shard === undefined || w.dryRun || w.status >= 300) return [];
    const holder = w.method === "DELETE" ? "" : (w.holder ?? "");
    return [{ shard, holder, epoch: w.transitions ?? 0, at: w.at }];
  });
}

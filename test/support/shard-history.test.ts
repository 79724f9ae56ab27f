// The sharding proof's checker on crafted histories: a clean failover and a clean hand-over pass;
// every way two replicas can commit to one shard is reported. Then the same checker fed from what
// the S3 and k8s emulators actually recorded over the wire.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { K8sEmulator } from "./k8s-emulator.ts";
import { S3Emulator } from "./s3-emulator.ts";
import {
  assertOneCommitterPerShard,
  k8sLeaseWrites,
  s3Commits,
  s3LeaseWrites,
  shardHistoryViolations,
  shardStateKey,
  type ShardCommit,
  type ShardLeaseWrite,
} from "./shard-history.ts";

const c = (shard: string, epoch: number, writer: string, at: number): ShardCommit => ({
  shard,
  epoch,
  writer,
  at,
});
const l = (shard: string, holder: string, epoch: number, at: number): ShardLeaseWrite => ({
  shard,
  holder,
  epoch,
  at,
});

/** a holds org1 (epoch 1) and is killed; b takes it (epoch 2); b hands it to c cleanly (epoch 3). */
const GOOD_LEASES = [
  l("org1", "a", 1, 0),
  l("org1", "a", 1, 5),
  l("org1", "b", 2, 20),
  l("org1", "", 2, 32),
  l("org1", "c", 3, 33),
];
const GOOD_COMMITS = [
  c("org1", 1, "a", 1),
  c("org1", 1, "a", 6),
  c("org1", 2, "b", 21),
  c("org1", 2, "b", 31),
  c("org1", 3, "c", 34),
  c("org2", 1, "b", 2),
];

const kinds = (commits: ShardCommit[], leases?: ShardLeaseWrite[]): string[] =>
  shardHistoryViolations(commits, leases).map((v) => `${v.shard} ${v.kind}`);

describe("shard history checker", () => {
  it("passes a kill -9 failover and a clean hand-over", () => {
    assert.deepEqual(kinds(GOOD_COMMITS, GOOD_LEASES.concat(l("org2", "b", 1, 0))), []);
    assertOneCommitterPerShard(GOOD_COMMITS, GOOD_LEASES.concat(l("org2", "b", 1, 0)));
  });

  it("reports a commit older than one already written", () => {
    const bad = [...GOOD_COMMITS, c("org1", 1, "a", 22)];
    assert.ok(kinds(bad).includes("org1 stale-epoch"), kinds(bad).join());
    assert.throws(() => {
      assertOneCommitterPerShard(bad);
    }, /org1 stale-epoch: epoch 1 by a at 22\.0 after epoch 2 by b/);
  });

  it("reports two writers under one epoch", () => {
    const bad = [c("org1", 1, "a", 1), c("org1", 1, "b", 2)];
    assert.deepEqual(kinds(bad), ["org1 two-writers"]);
  });

  it("reports two terms whose commits interleave, even without writers", () => {
    const bad: ShardCommit[] = [
      { shard: "org3", epoch: 1, at: 1 },
      { shard: "org3", epoch: 2, at: 2 },
      { shard: "org3", epoch: 1, at: 3 },
    ];
    assert.deepEqual(kinds(bad), ["org3 stale-epoch", "org3 overlap"]);
  });

  it("reports a commit while another replica holds the lease, after a release, or before any lease", () => {
    // b won the lease (epoch 2) but a, not yet fenced, still commits under epoch 1 before b does.
    const leases = [l("org1", "a", 1, 0), l("org1", "b", 2, 10)];
    assert.deepEqual(kinds([c("org1", 1, "a", 1), c("org1", 1, "a", 11), c("org1", 2, "b", 12)], leases), [
      "org1 unleased",
    ]);
    // A commit after its own release.
    assert.deepEqual(
      kinds([c("org1", 1, "a", 1), c("org1", 1, "a", 3)], [l("org1", "a", 1, 0), l("org1", "", 1, 2)]),
      ["org1 unleased"],
    );
    // The right epoch, the wrong holder.
    assert.deepEqual(kinds([c("org1", 1, "b", 1)], [l("org1", "a", 1, 0)]), ["org1 unleased"]);
    assert.deepEqual(kinds([c("org1", 1, "a", 1)], []), ["org1 unleased"]);
  });

  it("fails an empty history: a proof that recorded nothing proves nothing", () => {
    assert.throws(() => {
      assertOneCommitterPerShard([]);
    }, /no shard checkpoint write was recorded/);
  });

  it("names each shard's document with -<org> before the extension", () => {
    assert.equal(shardStateKey("sf2loki/state.json", "org1"), "sf2loki/state-org1.json");
    assert.equal(shardStateKey("sf2loki.d/state", "org1"), "sf2loki.d/state-org1");
  });
});

describe("shard history from the emulators' records", () => {
  it("reads S3 checkpoint and lease writes with their signer and epoch, in apply order", async (t) => {
    const s3 = new S3Emulator({ buckets: ["b"] });
    const url = await s3.start();
    t.after(() => s3.close());
    const put = async (key: string, body: unknown, signer: string): Promise<void> => {
      const res = await fetch(`${url}/b/${key}`, {
        method: "PUT",
        body: JSON.stringify(body),
        headers: {
          authorization: `AWS4-HMAC-SHA256 Credential=${signer}/20261201/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0`,
        },
      });
      assert.equal(res.status, 200);
    };
    await put("leases/org1", { holder: "a", epoch: 1, ttl_ms: 3000 }, "a");
    await put("leases/members/a", { holder: "a", epoch: 1, ttl_ms: 3000 }, "a");
    await put("s/state-org1.json", { __fence_epoch__: "1", "org=org1:pubsub:/event/X": "AAA" }, "a");
    await put("leases/org1", { holder: "b", epoch: 2, ttl_ms: 3000 }, "b");
    await put("s/state-org1.json", { __fence_epoch__: "1" }, "a"); // a, fenced too late
    const commits = s3Commits(s3.writes, "s/state.json", ["org1"]);
    const leases = s3LeaseWrites(s3.writes, "leases", ["org1"]);
    assert.deepEqual(
      commits.map((x) => [x.shard, x.epoch, x.writer]),
      [
        ["org1", 1, "a"],
        ["org1", 1, "a"],
      ],
    );
    assert.deepEqual(
      leases.map((x) => [x.holder, x.epoch]),
      [
        ["a", 1],
        ["b", 2],
      ],
    );
    assert.deepEqual(kinds(commits, leases), ["org1 unleased"]);
  });

  it("reads k8s shard Lease writes (successful ones, membership Leases excluded), releases included", async (t) => {
    const k8s = await K8sEmulator.start();
    t.after(() => k8s.close());
    const base = `${k8s.url}/apis/coordination.k8s.io/v1/namespaces/ns/leases`;
    const send = async (method: string, path: string, body?: unknown): Promise<number> => {
      const res = await fetch(base + path, {
        method,
        headers: { authorization: "Bearer t", "content-type": "application/json" },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      const answer = (await res.json()) as { metadata?: { resourceVersion?: string } };
      return Number(answer.metadata?.resourceVersion ?? res.status);
    };
    const lease = (name: string, holder: string | undefined, epoch: number, rv?: number) => ({
      metadata: { name, ...(rv === undefined ? {} : { resourceVersion: String(rv) }) },
      spec: { ...(holder === undefined ? {} : { holderIdentity: holder }), leaseTransitions: epoch },
    });
    const rv = await send("POST", "", lease("sf2loki-org1", "a", 1));
    await send("POST", "", lease("sf2loki-member-a", "a", 1));
    await send("POST", "", lease("sf2loki-org1", "b", 1)); // 409 AlreadyExists: not a lease write
    await send("PUT", "/sf2loki-org1", lease("sf2loki-org1", undefined, 1, rv));
    const leases = k8sLeaseWrites(k8s.writes, "sf2loki", ["org1"]);
    assert.deepEqual(
      leases.map((x) => [x.holder, x.epoch]),
      [
        ["a", 1],
        ["", 1],
      ],
    );
    assert.ok(leases[0]!.at < leases[1]!.at);
  });
});

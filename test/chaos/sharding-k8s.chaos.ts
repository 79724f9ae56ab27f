// Sharding end to end on k8s Leases (the Kubernetes API emulator), checkpoints in the S3 emulator:
// 3 replicas × 6 orgs of one simulated Salesforce, real daemons; kill -9 of one, a 4th joining, and
// SIGTERM of all, one after another. Nothing lost, every lease released, no shard ever with two
// replicas committing.
import { test } from "node:test";
import { ShardRig, shardingProof } from "./sharding-support.ts";

test("k8s_lease sharding: 3 replicas x 6 orgs, kill -9, a 4th joins, SIGTERM all one after another", async (t) => {
  await shardingProof(
    t,
    await ShardRig.start(t, "k8s_lease + s3", { orgs: 6, seed: 31, eventsPerTopic: 1000 }),
  );
});

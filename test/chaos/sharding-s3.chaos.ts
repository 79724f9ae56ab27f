// Sharding end to end on S3 lease objects (ListObjectsV2 membership) with the checkpoints in the same
// S3 emulator: 3 replicas × 6 orgs of one simulated Salesforce, real daemons; kill -9 of one, a 4th
// joining, and SIGTERM of all, one after another. Nothing lost, every lease released, no shard with
// two committers.
import { test } from "node:test";
import { ShardRig, shardingProof } from "./sharding-support.ts";

test("s3_lease sharding: 3 replicas x 6 orgs, kill -9, a 4th joins, SIGTERM all one after another", async (t) => {
  await shardingProof(
    t,
    await ShardRig.start(t, "s3_lease + s3", { orgs: 6, seed: 32, eventsPerTopic: 1000 }),
  );
});

// One daemon process loses leadership (fenced: its Lease writes hang) and wins it back three times, on
// k8s_lease + the GCS store. Each loss must leave nothing behind (queues empty, subscriptions closed),
// and each win must start from the checkpoints the other leader committed, never from a stale cache.
import assert from "node:assert/strict";
import { test } from "node:test";
import { DEMO_TOPICS, type DemoWorld } from "../../src/sim/demo-world.ts";
import { assertNoCheckpointRegression } from "./checkpoint-writes.ts";
import { HaRig, assertOneLeader, eventually, totals } from "./ha-support.ts";

interface LaneStatus {
  queued_entries: number;
  queued_bytes: number;
  batching_entries: number;
  in_flight: number;
  awaiting_commit: number;
}

const activeStreams = (world: DemoWorld): number => world.org.stats().streams.filter((s) => s.active).length;

test("k8s_lease + GCS store: one process loses and re-acquires leadership three times, leaving nothing behind", async (t) => {
  const rig = await HaRig.start(t, "k8s_lease + gcs", { seed: 25, eventsPerTopic: 3000 });
  const { world, pairing } = rig;
  const a = await rig.spawnLeader("replica-a");
  rig.startTraffic();
  await rig.streamsOn(1500, "a");
  const oneSubscriptionPerTopic = (): Promise<void> =>
    eventually(
      () => Promise.resolve(activeStreams(world) === DEMO_TOPICS.length),
      5000,
      "one subscription per topic",
    );

  const windows: [number, number][] = [];
  const leftovers: (LaneStatus & { round: number; lane: string })[] = [];
  for (let round = 1; round <= 3; round++) {
    const other = await rig.spawnStandby(`replica-b${round}`);

    // Loss: a's Lease writes hang, it fences itself and the other replica takes over.
    const lostAt = Date.now();
    pairing.partition("replica-a");
    windows.push([lostAt, (await rig.takeover(other, lostAt)).gaugeAt]);
    await eventually(async () => (await a.get("/readyz")).body === "standby", 5000, "a to stand by");
    const status = JSON.parse((await a.get("/statusz")).body) as {
      pipeline: { lanes: Record<string, LaneStatus> };
    };
    for (const [lane, s] of Object.entries(status.pipeline.lanes)) {
      const { queued_entries, queued_bytes, batching_entries, in_flight, awaiting_commit } = s;
      const held = { queued_entries, queued_bytes, batching_entries, in_flight, awaiting_commit };
      if (Object.values(held).some((n) => n > 0)) leftovers.push({ round, lane, ...held });
    }
    pairing.heal("replica-a");
    await rig.streamsOn(1500, other.name);
    await oneSubscriptionPerTopic();

    // Win back: the other leader stops cleanly and releases; a leads again in the same process.
    const backAt = Date.now();
    const stopped = rig.stop(other);
    windows.push([backAt, (await rig.takeover(a, backAt)).gaugeAt]);
    await stopped;
    await rig.streamsOn(1500, "a");
    await oneSubscriptionPerTopic();
    assert.ok(a.alive, `a exited in round ${round}:\n${a.tail()}`);
  }

  assertOneLeader(await rig.drain(), windows);
  rig.assertNothingLost();
  // Three fenced losses, each leaving at most the batches pushed and not committed (max_uncommitted,
  // 16 x 1000) to re-deliver.
  const { duplicates } = totals(world);
  assert.ok(duplicates <= 3 * 16_000, `${duplicates} duplicates`);
  const writes = pairing.checkpoints();
  assertNoCheckpointRegression(writes);
  // a committed in each of its four terms: a stale cached generation would have crashed it instead.
  const terms = writes.filter((w, i) => w.by === "replica-a" && writes[i - 1]?.by !== "replica-a").length;
  assert.equal(terms, 4, "a's runs of checkpoint writes");
  await rig.stop(a);
  t.diagnostic(
    `three losses and re-acquisitions: ${duplicates} duplicates, ${writes.length} checkpoint writes`,
  );
  // Checked last so the properties above are reported first: a standby holds nothing of its last term.
  assert.deepEqual(leftovers, [], "a's lanes right after each loss (its /statusz)");
});

// HA end to end with k8s_lease (the Kubernetes API emulator) + the GCS store (the GCS emulator): real
// daemons, a kill -9 and a SIGTERM of the leader mid-stream, and a leader whose Lease writes hang.
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import {
  FENCED,
  HaRig,
  RENEW_MS,
  assertOneLeader,
  killThenTerm,
  totals,
  uniqueDelivered,
  waitFor,
} from "./ha-support.ts";
import { assertNoCheckpointRegression } from "./checkpoint-writes.ts";

test("k8s_lease + GCS store: kill -9 then SIGTERM of the leader, nothing lost, one leader", async (t) => {
  await killThenTerm(t, await HaRig.start(t, "k8s_lease + gcs", { seed: 23, eventsPerTopic: 5000 }));
});

test("k8s_lease + GCS store: a leader whose Lease writes hang is fenced, stands by, and never overwrites the new leader", async (t) => {
  const rig = await HaRig.start(t, "k8s_lease + gcs", { seed: 24, eventsPerTopic: 5000 });
  const { world, pairing } = rig;
  const a = await rig.spawnLeader("replica-a");
  const b = await rig.spawnStandby("replica-b");
  rig.startTraffic();
  await waitFor(() => uniqueDelivered(world) >= 6000, 30_000, "a to deliver 6000 events");

  const partitionedAt = Date.now();
  pairing.partition("replica-a"); // a's Lease renewals now hang; its reads and its GCS writes still work
  const takeover = await rig.takeover(b, partitionedAt);
  const aFenced = a.logTime(FENCED, partitionedAt);
  assert.ok(aFenced !== undefined, `a never fenced itself:\n${a.tail()}`);
  // a stops trusting its lease (ttl - renew/2 after its last renewal) before b may take it (a ttl).
  assert.ok(aFenced < takeover.acquiredAt, `a fenced at ${aFenced}, after b led at ${takeover.acquiredAt}`);
  // Demoted in place: alive, standby on /readyz, leader gauge 0.
  assert.ok(a.alive, "the fenced leader exited");
  assert.deepEqual(await a.get("/readyz"), { status: 503, body: "standby" }, "the fenced leader's /readyz");
  assert.equal(await a.leaderGauge(), 0);
  await rig.streamsOn(3000, "b");

  // Healed, a sees b's live lease and keeps standing by.
  pairing.heal("replica-a");
  await delay(2 * RENEW_MS);
  assert.ok(a.alive, "the fenced leader exited after the partition healed");
  assert.equal((await a.get("/readyz")).body, "standby");
  assert.equal((await b.get("/readyz")).status, 200);

  const samples = await rig.drain();
  t.diagnostic(
    `partition: a fenced ${aFenced - partitionedAt} ms and b led ${takeover.acquiredAt - partitionedAt} ms ` +
      `after the partition; duplicates ${totals(world).duplicates}`,
  );
  rig.assertNothingLost();
  // At most the batches pushed and not committed re-deliver: max_uncommitted (16) x 1000.
  assert.ok(totals(world).duplicates <= 16_000, `${totals(world).duplicates} duplicates`);
  assertOneLeader(samples, [[partitionedAt, takeover.gaugeAt]]);
  const writes = pairing.checkpoints();
  assertNoCheckpointRegression(writes);
  const firstByB = writes.findIndex((w) => w.by === "replica-b");
  assert.ok(firstByB > 0 && writes.slice(0, firstByB).some((w) => w.by === "replica-a"), "both wrote state");
  const lateByA = writes.slice(firstByB).filter((w) => w.by !== "replica-b");
  assert.equal(lateByA.length, 0, "a write not by the new leader landed after its first checkpoint");
  await rig.stop(a);
  await rig.stop(b);
});

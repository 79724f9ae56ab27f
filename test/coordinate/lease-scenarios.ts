// The scenarios every lease backend must pass through the one LeaseCoordinator loop. Each backend's
// test file calls this inside its describe(), with a fixture built fresh in its beforeEach().
import assert from "node:assert/strict";
import { it } from "node:test";
import { FENCE_AFTER, RENEW, TTL, type Sim } from "./harness.ts";

export interface LeaseFixture {
  sim: Sim;
  /** The lease as stored right now, read behind the coordinators' backs ("" = nobody holds it). */
  stored: () => { holder: string; epoch: number };
  /** The backend's confirm read delay (0 for a real compare-and-swap). */
  confirmMs: number;
}

export function leaseScenarios(fixture: () => LeaseFixture): void {
  it("one replica leads and the other stands by", async () => {
    const { sim, stored } = fixture();
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(3 * TTL);
    assert.deepEqual(sim.leaders(), ["a"]);
    assert.deepEqual(b.events, []);
    assert.equal(b.coordinator.holder, "a");
    assert.deepEqual(stored(), { holder: "a", epoch: 1 });
    assert.equal(a.fenced(), false);
    assert.equal(b.fenced(), true);
    assert.ok(sim.writes.filter((w) => w.replica === "a" && w.ok).length >= 9, "a kept renewing");
  });

  it("a clean stop releases the lease (epoch kept) and the standby leads at once, not after a ttl", async () => {
    const { sim, stored, confirmMs } = fixture();
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(2 * RENEW);
    await sim.stop(a);
    assert.deepEqual(a.events, ["+", "-"]);
    assert.deepEqual(a.losses, [{ why: "stopping", termAborted: false }], "still leading while it drains");
    assert.deepEqual(stored(), { holder: "", epoch: 1 });
    const took = await sim.until(() => b.isLeader, "b takes over");
    assert.ok(took <= RENEW + confirmMs + 100, `takeover took ${took} ms`);
    assert.deepEqual(stored(), { holder: "b", epoch: 2 });
    assert.deepEqual(sim.events, ["a+", "a-", "b+"]);
  });

  it("a crashed leader is replaced one ttl after its last renewal, and fences itself first", async () => {
    const { sim, stored, confirmMs } = fixture();
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(2 * RENEW + 3000);
    a.clock.frozen = true; // the process dies: no more renewals, no release
    const lastRenewal = Math.max(
      ...sim.writes.filter((w) => w.replica === "a" && w.ok).map((w) => w.record.renewedAtMs ?? 0),
    );
    let fencedAt: number | undefined;
    sim.onStep = () => {
      if (fencedAt === undefined && a.fenced()) fencedAt = sim.clock.now();
    };
    await sim.until(() => b.isLeader, "b takes over");
    const tookOverAt = sim.clock.now();
    assert.ok(tookOverAt - lastRenewal >= TTL, "the standby waited a whole ttl on its own clock");
    assert.ok(tookOverAt - lastRenewal <= TTL + RENEW + confirmMs + 100, "and not much longer");
    assert.ok(fencedAt !== undefined && fencedAt < tookOverAt, "the old leader fenced itself before that");
    assert.ok(fencedAt - lastRenewal <= FENCE_AFTER + 100);
    assert.deepEqual(stored(), { holder: "b", epoch: 2 });
    assert.deepEqual(b.events, ["+"]);
  });

  it("resign: fenced and the term signal aborted at once, the lease released, and no campaign for a ttl", async () => {
    const { sim, stored, confirmMs } = fixture();
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(2 * RENEW);
    assert.equal(b.coordinator.resign("not leading"), false, "a standby has nothing to resign");
    const term = a.coordinator.termSignal;
    assert.equal(a.coordinator.resign("pipeline stalled"), true);
    assert.ok(term.aborted, "writes in flight under the term stop at once");
    assert.equal(a.fenced(), true);
    const took = await sim.until(() => b.isLeader, "b takes over");
    assert.ok(took <= RENEW + confirmMs + 100, `takeover took ${took} ms, not a ttl`);
    assert.deepEqual(a.losses, [{ why: "lost", termAborted: true }]);
    assert.deepEqual(stored(), { holder: "b", epoch: 2 });
    await sim.run(2 * TTL);
    assert.deepEqual(sim.leaders(), ["b"], "the resigned replica stands by");
  });

  it("a standby whose wall clock runs far ahead never takes over early", async () => {
    const { sim } = fixture();
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b", { wallOffsetMs: 3_600_000 });
    await sim.run(4 * TTL);
    assert.deepEqual(b.events, []);
    assert.deepEqual(sim.leaders(), ["a"]);
  });

  it("epochs strictly increase across every acquisition", async () => {
    const { sim } = fixture();
    const epochs: number[] = [];
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    epochs.push(a.epoch);
    const b = sim.replica("b");
    await sim.stop(a);
    await sim.until(() => b.isLeader, "b leads");
    epochs.push(b.epoch);
    const a2 = sim.replica("a2");
    await sim.stop(b);
    await sim.until(() => a2.isLeader, "a2 leads");
    epochs.push(a2.epoch);
    const b2 = sim.replica("b2");
    a2.clock.frozen = true;
    await sim.until(() => b2.isLeader, "b2 leads after a2 crashed");
    epochs.push(b2.epoch);
    assert.deepEqual(epochs, [1, 2, 3, 4]);
    const claims = sim.writes.filter(
      (w) => w.ok && w.record.holder !== "" && w.record.acquiredAtMs === w.record.renewedAtMs,
    );
    assert.deepEqual(
      claims.map((w) => w.record.epoch),
      [1, 2, 3, 4],
    );
  });

  it("takes back a live lease carrying its own identity at once, with a new epoch", async () => {
    const { sim, stored, confirmMs } = fixture();
    const a = sim.replica("a", { identity: "pod-a" });
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(RENEW);
    a.clock.frozen = true; // crash, then a restart under the same fixed identity
    const restarted = sim.replica("a-restarted", { identity: "pod-a" });
    const took = await sim.until(() => restarted.isLeader, "the restarted replica leads");
    assert.ok(took <= confirmMs + 100, `it waited ${took} ms, not a ttl`);
    assert.equal(restarted.epoch, 2);
    assert.deepEqual(stored(), { holder: "pod-a", epoch: 2 });
    assert.deepEqual(b.events, []);
  });
}

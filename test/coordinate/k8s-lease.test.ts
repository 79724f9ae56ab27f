// The k8s_lease coordinator through the real @kubernetes/client-node against a loopback API server.
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { K8sLeaseBackend } from "../../src/coordinate/k8s-lease/backend.ts";
import { leaseApiFor } from "../../src/coordinate/k8s-lease/client.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { FENCE_AFTER, RENEW, Sim, TTL } from "./harness.ts";
import { leaseScenarios, type LeaseFixture } from "./lease-scenarios.ts";

const NS = "sf2loki";
const NAME = "sf2loki-leader";

/** A real KubeConfig for the emulator; the token tells the emulator which replica is calling. */
export function emulatorKubeConfig(server: string, token: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "emulator", server, skipTLSVerify: true }],
    users: [{ name: "replica", token }],
    contexts: [{ name: "emulator", cluster: "emulator", user: "replica" }],
    currentContext: "emulator",
  });
  return kc;
}

interface StoredSpec {
  holderIdentity?: string | null;
  leaseTransitions?: number | null;
  leaseDurationSeconds?: number | null;
  renewTime?: string | null;
}

describe("k8s_lease coordinator", () => {
  let emu: K8sEmulator;
  let sim: Sim;
  let fixture: LeaseFixture;
  const spec = (): StoredSpec => emu.lease(NS, NAME)?.spec ?? {};

  before(async () => {
    emu = await K8sEmulator.start();
  });

  after(async () => {
    await emu.close();
  });

  beforeEach(() => {
    emu.reset();
    sim = new Sim(
      (name) =>
        new K8sLeaseBackend({
          namespace: NS,
          name: NAME,
          connect: () => Promise.resolve(leaseApiFor(emulatorKubeConfig(emu.url, `token-${name}`), NS, NAME)),
        }),
    );
    fixture = {
      sim,
      stored: () => {
        const s = spec();
        assert.equal(s.leaseDurationSeconds, 30);
        assert.match(s.renewTime ?? "", /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/, "a MicroTime");
        return { holder: s.holderIdentity ?? "", epoch: s.leaseTransitions ?? 0 };
      },
      confirmMs: 0,
    };
  });

  afterEach(async () => {
    for (const r of sim.replicas) emu.heal(`token-${r.name}`);
    await sim.stopAll();
  });

  leaseScenarios(() => fixture);

  it("a create race between two contenders yields exactly one leader (409 AlreadyExists)", async () => {
    emu.barrier("GET", 2); // both read "absent" before either creates
    const a = sim.replica("a");
    const b = sim.replica("b");
    await sim.until(() => sim.leaders().length > 0, "someone leads");
    await sim.run(3 * TTL);
    assert.equal(sim.leaders().length, 1);
    const posts = emu.writes.filter((w) => w.method === "POST").map((w) => w.status);
    assert.deepEqual(posts.sort(), [201, 409]);
    assert.equal(a.events.length + b.events.length, 1);
    assert.equal(spec().leaseTransitions, 1);
  });

  it("a replace race on a released lease yields exactly one leader (409 Conflict)", async () => {
    emu.seed(NS, NAME, { metadata: { name: NAME }, spec: { leaseTransitions: 5, leaseDurationSeconds: 30 } });
    emu.barrier("GET", 2); // both read the same resourceVersion before either replaces
    sim.replica("a");
    sim.replica("b");
    await sim.until(() => sim.leaders().length > 0, "someone leads");
    await sim.run(3 * TTL);
    assert.equal(sim.leaders().length, 1);
    const claims = emu.writes.filter((w) => w.method === "PUT" && w.transitions === 6).map((w) => w.status);
    assert.deepEqual(claims.slice(0, 2).sort(), [200, 409]);
    assert.equal(spec().leaseTransitions, 6);
  });

  for (const [label, leaseSpec] of [
    ["a null spec", null],
    [
      "all-null fields",
      { holderIdentity: null, leaseDurationSeconds: null, renewTime: null, leaseTransitions: null },
    ],
    ["a holder but no duration or renewTime", { holderIdentity: "ghost", leaseDurationSeconds: null }],
  ] as const) {
    it(`claims a Lease with ${label} at once and never crashes (#62)`, async () => {
      emu.seed(NS, NAME, { metadata: { name: NAME }, spec: leaseSpec });
      const a = sim.replica("a");
      const took = await sim.until(() => a.isLeader, "a leads");
      assert.equal(took, 0);
      assert.equal(a.epoch, 1);
      assert.equal(spec().holderIdentity, "a");
    });
  }

  it("a partitioned leader fences itself before the standby takes over", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(RENEW + 3000);
    const lastRenewal = Math.max(
      ...sim.writes.filter((w) => w.replica === "a" && w.ok).map((w) => w.record.renewedAtMs ?? 0),
    );
    emu.partition("token-a"); // a's writes hang; it can still read
    a.backend.hanging = true;
    const writesBefore = emu.writes.length;
    let fencedAt: number | undefined;
    let bothTrusted = false;
    sim.onStep = () => {
      if (fencedAt === undefined && a.fenced()) fencedAt = sim.clock.now();
      if (b.isLeader && !a.fenced()) bothTrusted = true;
    };
    await sim.until(() => b.isLeader, "b takes over");
    const tookOverAt = sim.clock.now();
    assert.equal(bothTrusted, false, "never two replicas passing checkFence");
    assert.ok(fencedAt !== undefined);
    assert.ok(fencedAt - lastRenewal <= FENCE_AFTER + 100, "fenced on its own clock within the deadline");
    assert.ok(tookOverAt - fencedAt >= RENEW / 2 - 100, "with a margin before the takeover");
    assert.deepEqual(a.events, ["+", "-"]);
    assert.ok(emu.held("token-a") <= 1, "abandoned writes were dropped, not piled up");
    assert.equal(
      emu.writes.slice(writesBefore).filter((w) => w.token === "token-a" && w.status === 200).length,
      0,
      "no write of a landed during the partition",
    );
    emu.heal("token-a");
    a.backend.hanging = false;
    await sim.run(2 * TTL);
    assert.deepEqual(sim.leaders(), ["b"]);
    assert.equal(spec().holderIdentity, "b");
    assert.equal(spec().leaseTransitions, 2);
  });

  it("a renewal that hangs is abandoned at its timeout and retried, keeping leadership", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    await sim.run(RENEW - 500);
    emu.partition("token-a");
    a.backend.hanging = true;
    const requestsBefore = emu.requests.length;
    await sim.run(RENEW / 2 + 2000); // past the call timeout (renew/2) of the first hung PUT
    const hungPuts = emu.requests.slice(requestsBefore).filter((r) => r === "PUT token-a").length;
    assert.equal(hungPuts, 2, "the first PUT was abandoned at its timeout and a second one sent");
    emu.heal("token-a");
    a.backend.hanging = false;
    await sim.run(2 * TTL);
    assert.deepEqual(a.events, ["+"]);
    assert.equal(a.fenced(), false);
    const puts = sim.writes.filter((w) => w.replica === "a" && w.record.holder === "a" && w.ok);
    assert.ok(puts.length >= 6);
    assert.equal(spec().leaseTransitions, 1);
  });

  it("retries 500s on acquire and renew without losing the lease", async () => {
    emu.failNext(2, 500, ["POST"]);
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads despite two failed creates");
    emu.failNext(2, 500, ["PUT"]);
    await sim.run(3 * TTL);
    assert.deepEqual(a.events, ["+"]);
    assert.equal(emu.writes.filter((w) => w.status === 500).length, 4);
    assert.equal(a.fenced(), false);
  });

  it("callbacks strictly alternate over three lose and re-acquire cycles (renew 409, #111)", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const epochs = [a.epoch];
    for (let cycle = 0; cycle < 3; cycle++) {
      // Another client takes the Lease over (a newer resourceVersion): a's next renew gets 409.
      emu.seed(NS, NAME, {
        metadata: { name: NAME },
        spec: {
          holderIdentity: "intruder",
          leaseDurationSeconds: 30,
          renewTime: new Date(sim.clock.now()).toISOString(),
          leaseTransitions: a.epoch + 1,
        },
      });
      await sim.until(() => a.events.length === 2 * cycle + 2, `a loses (cycle ${cycle})`);
      assert.equal(a.coordinator.holder, "intruder");
      // ...and releases it again.
      emu.seed(NS, NAME, { metadata: { name: NAME }, spec: { leaseTransitions: a.epoch + 1 } });
      await sim.until(() => a.isLeader, `a re-acquires (cycle ${cycle})`);
      epochs.push(a.epoch);
    }
    assert.deepEqual(a.events, ["+", "-", "+", "-", "+", "-", "+"]);
    assert.deepEqual(a.leaderInCallbacks, [true, false, true, false, true, false, true]);
    assert.deepEqual(epochs, [1, 3, 5, 7]);
    assert.ok(emu.writes.some((w) => w.token === "token-a" && w.status === 409));
  });

  it("surrenders when the Lease is deleted, and re-creates it with a higher epoch", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    emu.remove(NS, NAME);
    await sim.until(() => a.events.length === 3, "a loses and re-acquires");
    assert.deepEqual(a.events, ["+", "-", "+"]);
    assert.equal(a.epoch, 2, "the epoch continues from memory, not from the new Lease");
    assert.equal(spec().leaseTransitions, 2);
  });
});

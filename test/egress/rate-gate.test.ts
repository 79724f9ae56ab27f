// The token buckets and the lane-fair gate over them, on a manual clock.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ManualClock } from "../../src/util/clock.ts";
import { TokenBucket } from "../../src/egress/token-bucket.ts";
import { RateGate } from "../../src/egress/rate-gate.ts";
import { settle } from "../support/fakes.ts";

test("a bucket starts with one second of rate, refills continuously, and lets an oversized request go negative", () => {
  const clock = new ManualClock({ auto: false });
  const b = new TokenBucket(1000, clock);
  assert.equal(b.waitMs(1000), 0);
  b.take(1000);
  assert.equal(b.waitMs(500), 500);
  clock.advance(250);
  assert.equal(b.waitMs(500), 250);
  clock.advance(750);
  // 5000 > capacity: waits only for a full bucket, then takes it all.
  assert.equal(b.waitMs(5000), 0);
  b.take(5000);
  assert.equal(b.tokens, -4000);
  assert.equal(Math.round(b.waitMs(1)), 4001);
  clock.advance(60_000);
  assert.equal(b.tokens, 1000, "never more than one second of rate");
});

test("a wait that float arithmetic leaves a few ulps short ends: the gate does not spin on it", async () => {
  // The figures of a paced Loki tenant (#26): 90 % of 262 144 bytes/s, two ~365 KB requests taken into
  // debt, then a 9 620-byte one, whose refill landed at 9 619.99999999997 and waited 1e-13 ms, forever.
  const clock = new (class extends ManualClock {
    override sleep(ms: number, signal?: AbortSignal): Promise<void> {
      if (this.sleeps.length > 50) return Promise.reject(new Error(`spinning: sleeps of ${ms} ms`));
      return super.sleep(ms, signal);
    }
  })();
  const gate = new RateGate({ linesPerSecond: 0, bytesPerSecond: 0 }, clock);
  gate.setBytesPerSecond(235_929.6, true);
  await gate.acquire(0, 365_340, "bulk");
  await gate.acquire(0, 364_820, "bulk");
  await gate.acquire(0, 9_620, "bulk");
  assert.ok(clock.sleeps.length <= 6, `${clock.sleeps.length} sleeps`);
});

test("the gate delays to the cap and reports the wait; an aborted wait takes nothing", async () => {
  const clock = new ManualClock({ auto: false });
  const gate = new RateGate({ linesPerSecond: 10, bytesPerSecond: 0 }, clock);
  assert.equal(await gate.acquire(10, 0, "bulk"), 0);
  let waited: number | undefined;
  const p = gate.acquire(5, 0, "bulk").then((ms) => (waited = ms));
  await settle();
  assert.equal(waited, undefined);
  clock.advance(500);
  await p;
  assert.equal(waited, 500);
  const abort = new AbortController();
  const q = gate.acquire(10, 0, "bulk", abort.signal);
  await settle();
  abort.abort(new Error("stop"));
  await assert.rejects(q, /stop/);
  assert.equal(gate.waiting, 0);
  clock.advance(1000);
  assert.equal(await gate.acquire(10, 0, "bulk"), 0, "the aborted waiter took no tokens");
});

test("a streaming push goes ahead of every queued bulk push, even one already sleeping at the head", async () => {
  const clock = new ManualClock({ auto: false });
  const gate = new RateGate({ linesPerSecond: 0, bytesPerSecond: 1000 }, clock);
  await gate.acquire(0, 1000, "bulk"); // bucket empty
  const order: string[] = [];
  const bulk = [1, 2, 3].map((i) => gate.acquire(0, 1000, "bulk").then(() => order.push(`bulk${i}`)));
  await settle();
  clock.advance(400); // bulk1 sleeps at the head
  const live = gate.acquire(0, 1000, "streaming").then(() => order.push("live"));
  await settle();
  for (let i = 0; i < 40; i++) {
    clock.advance(100);
    await settle();
  }
  await Promise.all([...bulk, live]);
  assert.deepEqual(order, ["live", "bulk1", "bulk2", "bulk3"]);
});

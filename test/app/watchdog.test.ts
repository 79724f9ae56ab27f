// The leader's liveness watchdog (#17) on a manual clock: a leader with work and no progress is stalled
// (readiness, one resignation); a store failing that long stalls it too; a process with work that
// attempts nothing at all is wedged (liveness); a standby is never stalled.
import assert from "node:assert/strict";
import { test } from "node:test";
import { MeterProvider } from "@opentelemetry/sdk-metrics";
import type { ProgressReport } from "../../src/pipeline/progress.ts";
import type { StoreFailure } from "../../src/state/tracked-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { Watchdog } from "../../src/daemon/watchdog.ts";
import { captureLogger } from "../state/helpers/capture-logger.ts";

function rig(opts: { stallMs?: number; livenessMs?: number } = {}) {
  const clock = new ManualClock({ auto: false });
  const world = {
    leading: true,
    progress: undefined as ProgressReport | undefined,
    failing: undefined as StoreFailure | undefined,
    stalls: [] as string[],
    handOver: true,
  };
  const log = captureLogger();
  const dog = new Watchdog({
    stallMs: opts.stallMs ?? 60_000,
    livenessMs: opts.livenessMs ?? 300_000,
    clock,
    meter: new MeterProvider().getMeter("test"),
    logger: log.logger,
    leading: () => world.leading,
    progress: () => world.progress,
    storeFailing: () => world.failing,
    onStall: (reason) => {
      world.stalls.push(reason);
      return world.handOver;
    },
  });
  return { clock, world, dog, log };
}

test("work pending with no commit and no push attempt past stall_timeout: stalled once, lease handed over", () => {
  const { world, dog } = rig();
  world.progress = { pending: true, sinceProgressMs: 59_000, sinceAttemptMs: 1000 };
  dog.tick();
  assert.equal(dog.stalled, undefined);
  world.progress = { pending: true, sinceProgressMs: 61_000, sinceAttemptMs: 1000 };
  dog.tick();
  assert.match(String(dog.stalled), /pipeline stalled: work pending but no commit or push attempt for 61s/);
  dog.tick();
  assert.equal(world.stalls.length, 1, "one resignation per stall, not one per tick");
  assert.equal(dog.wedged, undefined, "commit attempts still happen: not wedged");

  world.leading = false; // the resignation took effect
  dog.tick();
  assert.equal(dog.stalled, undefined, "a standby is not stalled");
});

test("idle is not stalled: no work pending means nothing to make progress on", () => {
  const { world, dog } = rig();
  world.progress = { pending: false, sinceProgressMs: 3_600_000, sinceAttemptMs: 3_600_000 };
  dog.tick();
  assert.equal(dog.stalled, undefined);
  assert.equal(dog.wedged, undefined);
});

test("a checkpoint store failing past stall_timeout stalls the leader with the store's error", () => {
  const { clock, world, dog } = rig();
  world.failing = { sinceMono: clock.monotonic(), error: "no answer for 10s", count: 0 };
  clock.advance(30_000);
  dog.tick();
  assert.equal(dog.stalled, undefined);
  clock.advance(31_000);
  dog.tick();
  assert.match(String(dog.stalled), /^checkpoint store failing for 61s: no answer for 10s$/);
  assert.equal(world.stalls.length, 1);
});

test("nothing attempted at all past liveness_timeout is wedged (liveness fails), leader or not", () => {
  const { world, dog, log } = rig({ livenessMs: 300_000 });
  world.leading = false;
  world.progress = { pending: true, sinceProgressMs: 301_000, sinceAttemptMs: 301_000 };
  dog.tick();
  assert.match(dog.wedged ?? "", /wedged: work pending and nothing attempted .* for 301s/);
  assert.ok(log.lines.some((r) => /is wedged/.test(r.msg)));
  world.progress = { pending: true, sinceProgressMs: 0, sinceAttemptMs: 0 };
  dog.tick();
  assert.equal(dog.wedged, undefined, "heals by itself");
});

test("a stall with nobody to hand over to (noop) is reported, and 0 disables both checks", () => {
  const { world, dog, log } = rig();
  world.handOver = false;
  world.progress = { pending: true, sinceProgressMs: 61_000, sinceAttemptMs: 61_000 };
  dog.tick();
  assert.ok(dog.stalled);
  assert.ok(log.lines.some((r) => /no other replica to hand over to/.test(r.msg)));

  const off = rig({ stallMs: 0, livenessMs: 0 });
  off.world.progress = { pending: true, sinceProgressMs: 1e9, sinceAttemptMs: 1e9 };
  off.dog.tick();
  assert.equal(off.dog.stalled, undefined);
  assert.equal(off.dog.wedged, undefined);
});

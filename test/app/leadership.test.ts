// The app's leadership lifecycle with a coordinator driven by hand: standby readiness, loss and
// re-acquisition without leaked queues or stale caches (#48, #92), and a fenced commit that demotes
// in place instead of ending the process (#97).
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as delay } from "node:timers/promises";
import { createApp, type App } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { deepMerge } from "../../src/config/env.ts";
import type { BuiltCoordinator } from "../../src/coordinate/build.ts";
import type { LeadershipCallbacks, LossReason } from "../../src/coordinate/coordinator.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { StateFenceError } from "../../src/state/errors.ts";
import { tempDir } from "../support/tmp.ts";

const TOPIC = "/event/LoginEventStream";

/** Read through a call: an await may have aborted the signal since the loop condition ran. */
const stopped = (signal: AbortSignal): boolean => signal.aborted;

/** Leadership on cue: `acquire()` and `lose()` resolve once the app's callback has finished. */
class ScriptedCoordinator implements BuiltCoordinator {
  epoch = 0;
  fenced = false;
  termSignal: AbortSignal | undefined = undefined;
  resigned: string[] = [];
  /** Why the next lose() ends the term. */
  why: LossReason = "lost";
  /** Runs synchronously right after onLose was called, before its drain can have finished. */
  onLoseCalled: (() => void) | undefined;
  #leader = false;
  #cue: (() => void) | undefined;
  #done: (() => void) | undefined;

  get isLeader(): boolean {
    return this.#leader;
  }
  get holder(): string | undefined {
    return this.#leader ? "me" : "other";
  }
  resign(reason: string): boolean {
    this.resigned.push(reason);
    return false;
  }
  checkFence(): void {
    if (!this.#leader || this.fenced)
      throw new StateFenceError("refusing checkpoint commit; me does not hold the lease");
  }

  async run(cb: LeadershipCallbacks): Promise<void> {
    while (!cb.signal.aborted) {
      await this.#next(cb.signal);
      if (stopped(cb.signal)) break;
      this.epoch++;
      this.#leader = true;
      await cb.onAcquire();
      this.#settle();
      await this.#next(cb.signal);
      // A clean stop keeps the lease until the drain is over; a loss ends it first.
      if (this.why === "lost") this.#leader = false;
      const losing = cb.onLose(this.why);
      this.onLoseCalled?.();
      await losing;
      this.#leader = false;
      this.#settle();
    }
  }

  acquire(): Promise<void> {
    return this.#trigger();
  }
  lose(): Promise<void> {
    return this.#trigger();
  }

  #trigger(): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#done = resolve;
      const cue = this.#cue;
      this.#cue = undefined;
      cue?.();
    });
  }
  #settle(): void {
    const done = this.#done;
    this.#done = undefined;
    done?.();
  }
  #next(signal: AbortSignal): Promise<void> {
    return new Promise<void>((resolve) => {
      this.#cue = resolve;
      signal.addEventListener(
        "abort",
        () => {
          resolve();
        },
        { once: true },
      );
    });
  }
}

async function waitFor(cond: () => boolean, what: string, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(50);
  }
}

async function readyz(app: App): Promise<string> {
  const res = await fetch(`${app.healthUrl()!}/readyz`);
  return `${res.status} ${await res.text()}`;
}

async function leaderGauge(app: App): Promise<string | undefined> {
  const text = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
  return /^sf2loki_leader (\d)/m.exec(text)?.[1];
}

function setup(world: DemoWorld, statePath: string, coordinator: ScriptedCoordinator): App {
  const tree = deepMerge(world.config(statePath), {
    coordinate: { type: "file_lease", file_lease: { path: join(tempDir(), "unused.lease") } },
  });
  return createApp(validateConfig(tree), { coordinator, healthAddr: "127.0.0.1:0" });
}

/** A demo world and an app led by hand, both stopped at the end of `t`; waits until it campaigns. */
async function campaigning(
  t: TestContext,
  world: { seed: number; eventsPerTopic: number },
  statePath = join(tempDir(), "state.json"),
): Promise<{
  world: DemoWorld;
  app: App;
  coordinator: ScriptedCoordinator;
  stop: AbortController;
  run: Promise<void>;
}> {
  const demo = await startDemoWorld({ ...world, topics: [TOPIC] });
  t.after(() => demo.stop());
  const coordinator = new ScriptedCoordinator();
  const app = setup(demo, statePath, coordinator);
  const stop = new AbortController();
  const run = app.run(stop.signal);
  t.after(async () => {
    stop.abort();
    await run;
  });
  await waitFor(() => app.status()["not_ready_reason"] === "standby", "campaigning");
  return { world: demo, app, coordinator, stop, run };
}

const replayId = (n: number): string => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(n));
  return b.toString("base64");
};

test("lose and re-acquire three times: empty queues, fresh checkpoints each term, standby in between", async (t) => {
  const world = await startDemoWorld({ seed: 2, eventsPerTopic: 2000, topics: [TOPIC] });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const coordinator = new ScriptedCoordinator();
  const app = setup(world, statePath, coordinator);
  const stop = new AbortController();
  const run = app.run(stop.signal);
  t.after(async () => {
    stop.abort();
    await run;
  });
  await waitFor(() => app.healthUrl() !== undefined, "the health server");
  await waitFor(() => app.status()["not_ready_reason"] === "standby", "campaigning");
  assert.equal(await readyz(app), "503 standby", "a replica that has never led is a standby, not broken");

  let emitted = 2000;
  const skipped = new Set<string>();
  for (let term = 1; term <= 3; term++) {
    await coordinator.acquire();
    assert.equal(await readyz(app), "200 ready");
    await waitFor(() => world.stats()[TOPIC]!.delivered >= emitted - skipped.size, `term ${term} delivery`);
    await coordinator.lose();

    const lanes = (
      app.status()["pipeline"] as {
        lanes: Record<string, { queued_entries: number; queued_bytes: number; in_flight: number }>;
      }
    ).lanes;
    // No bytes and no pushes survive a term. Under load a single zero-cost item (an end-of-stream
    // marker or keepalive token) can remain in the finished run's queue; the next run builds new lanes.
    for (const lane of Object.values(lanes)) {
      assert.deepEqual([lane.queued_bytes, lane.in_flight], [0, 0]);
      assert.ok(lane.queued_entries <= 1, `${lane.queued_entries} entries left queued`);
    }
    assert.equal(await readyz(app), "503 standby");
    assert.equal(await leaderGauge(app), "0");

    // Another leader ships 500 new events and commits past them while we stand by.
    world.org.faults.publish(TOPIC, 500);
    for (let n = emitted + 1; n <= emitted + 500; n++) skipped.add(`sim-LoginEventStream-${n}`);
    emitted += 500;
    const doc = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
    writeFileSync(statePath, JSON.stringify({ ...doc, [`pubsub:${TOPIC}`]: replayId(emitted) }));
  }

  // The last term resumes from the other leader's checkpoint: nothing it shipped is shipped again.
  world.org.faults.publish(TOPIC, 100);
  emitted += 100;
  await coordinator.acquire();
  await waitFor(() => world.stats()[TOPIC]!.delivered >= emitted - skipped.size, "the final term");
  const missing = world.missingIds(10_000)[TOPIC]!;
  assert.deepEqual(
    new Set(missing),
    skipped,
    "exactly the other leader's events are the ones we did not ship",
  );
  assert.equal(world.stats()[TOPIC]!.duplicates, 0);
  assert.equal(coordinator.epoch, 4);
  stop.abort();
  await run;
});

test("a fenced commit demotes to standby in place and never ends the process (#97)", async (t) => {
  const world = await startDemoWorld({ seed: 4, eventsPerTopic: 1000, topics: [TOPIC] });
  t.after(() => world.stop());
  const coordinator = new ScriptedCoordinator();
  const app = setup(world, join(tempDir(), "state.json"), coordinator);
  const stop = new AbortController();
  let ended = false;
  const run = app.run(stop.signal).finally(() => (ended = true));
  t.after(async () => {
    stop.abort();
    await run;
  });

  await waitFor(() => app.status()["not_ready_reason"] === "standby", "campaigning");
  coordinator.fenced = true; // a newer leader owns the checkpoints; our lease has not noticed yet
  await coordinator.acquire();
  await waitFor(
    () => app.status()["not_ready_reason"] === "standby" && app.status()["leader"] === false,
    "demotion",
  );
  assert.equal(await readyz(app), "503 standby");
  assert.equal(await leaderGauge(app), "0");
  await delay(200);
  assert.equal(ended, false, "a fenced run must not end the process");

  // The coordinator notices the loss, then leads again: delivery completes.
  await coordinator.lose();
  coordinator.fenced = false;
  await coordinator.acquire();
  await waitFor(() => world.stats()[TOPIC]!.delivered === 1000, "delivery after re-acquiring");
  stop.abort();
  await run;
});

test("a lost term demotes before it drains; a stopping one still leads while it drains (#17)", async (t) => {
  const { world, app, coordinator } = await campaigning(t, { seed: 5, eventsPerTopic: 500 });

  const seen: unknown[] = [];
  coordinator.onLoseCalled = () => seen.push([app.status()["leader"], app.status()["not_ready_reason"]]);
  await coordinator.acquire();
  await waitFor(() => world.stats()[TOPIC]!.delivered >= 500, "delivery");
  await coordinator.lose();
  assert.deepEqual(seen, [[false, "standby"]], "lost: standby the moment onLose starts");

  coordinator.why = "stopping";
  seen.length = 0;
  await coordinator.acquire();
  await coordinator.lose();
  assert.deepEqual(seen, [[true, null]], "stopping: still the leader while the last commits drain");
  assert.equal(app.status()["leader"], false);
});

test("the new term's first write stamps its epoch, before any checkpoint; a newer stored epoch hands the lease back", async (t) => {
  const statePath = join(tempDir(), "state.json");
  const { app, coordinator } = await campaigning(t, { seed: 7, eventsPerTopic: 0 }, statePath);
  await coordinator.acquire();
  const stored = (): Record<string, string> | undefined => {
    try {
      return JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
    } catch {
      return undefined;
    }
  };
  await waitFor(() => stored() !== undefined, "the term claim");
  assert.deepEqual(stored(), { __fence_epoch__: "1" }, "nothing but the term, before any event");
  await coordinator.lose();

  // Another replica's newer term is already in the document: this replica must not lead on it.
  writeFileSync(statePath, JSON.stringify({ __fence_epoch__: "9" }));
  await coordinator.acquire();
  await waitFor(() => coordinator.resigned.length === 1, "the lease handed back");
  assert.match(coordinator.resigned[0]!, /fenced by a newer term/);
  assert.equal(app.status()["leader"], false);
  assert.equal(await readyz(app), "503 standby");
  assert.deepEqual(stored(), { __fence_epoch__: "9" });
});

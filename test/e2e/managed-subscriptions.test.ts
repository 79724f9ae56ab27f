// Managed event subscriptions (#36) through the whole daemon against the simulated org: ManagedSubscribe
// delivers, sf2loki commits the replay id on Salesforce only after Loki accepted, a restart resumes from
// Salesforce's committed replay, and each way Salesforce can refuse ends in one line an operator can act on.
import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { validateConfig } from "../../src/config/load.ts";
import { createApp } from "../../src/daemon/app.ts";
import { createLogger } from "../../src/obs/logger.ts";
import { managedDemoSubscription, startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { runAppUntil } from "../support/run-app.ts";
import { tempDir } from "../support/tmp.ts";

const TOPICS = ["/event/LoginEventStream", "/event/ApiEventStream"];

interface Logged {
  level: string;
  event: string;
  [field: string]: unknown;
}

async function managedWorld(t: TestContext, eventsPerTopic: number): Promise<DemoWorld> {
  const world = await startDemoWorld({ eventsPerTopic, topics: TOPICS, managed: true });
  t.after(() => world.stop());
  return world;
}

/** A daemon on `world` whose log lines land in `lines`. */
function daemon(world: DemoWorld, statePath: string, lines: Logged[], extra: Record<string, unknown> = {}) {
  const logger = createLogger({
    level: "info",
    destination: { write: (l: string) => lines.push(JSON.parse(l) as Logged) },
  });
  return createApp(validateConfig({ ...world.config(statePath), ...extra }), { logger });
}

function managedStats(world: DemoWorld) {
  return world.org.stats().managed;
}

/** Every topic's events in Loki once, and every subscription committed up to its topic's last event. */
function settled(world: DemoWorld): boolean {
  const topics = world.org.stats().topics;
  const delivered = Object.values(world.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted);
  return delivered && managedStats(world).every((m) => m.committed === topics[m.topic]!.maxReplayId);
}

function assertOnce(world: DemoWorld): void {
  for (const [topic, s] of Object.entries(world.stats())) {
    assert.equal(s.missing, 0, `${topic}: missing`);
    assert.equal(s.duplicates, 0, `${topic}: duplicates`);
  }
}

test("a managed subscription delivers every event once and commits on Salesforce only what Loki accepted", async (t) => {
  const world = await managedWorld(t, 300);
  const statePath = join(tempDir(), "state.json");
  const lines: Logged[] = [];
  // Loki holds every push unanswered: nothing is accepted, so nothing may be committed anywhere.
  world.loki.faults.stall();
  const app = daemon(world, statePath, lines);
  const stop = new AbortController();
  const running = app.run(stop.signal);
  const sentBeforeRelease = async (): Promise<number> => {
    for (let i = 0; i < 200; i++) {
      const sent = world.org.stats().streams.reduce((n, s) => n + (s.managed ? s.sent : 0), 0);
      if (sent >= 2 * 300) return sent;
      await delay(25);
    }
    return -1;
  };
  assert.ok((await sentBeforeRelease()) >= 600, "the managed streams delivered while Loki was stalled");
  await delay(500);
  for (const m of managedStats(world)) {
    assert.equal(m.committed, undefined, `${m.developerName} committed before Loki accepted anything`);
    assert.equal(m.subscribed, true, `${m.developerName} has its subscriber`);
  }
  assert.equal(world.org.stats().subscribeCalls, 0, "no plain Subscribe for a managed topic");
  world.loki.faults.release();
  const deadline = Date.now() + 30_000;
  while (!settled(world) && Date.now() < deadline) await delay(50);
  stop.abort();
  await running;
  assert.ok(
    settled(world),
    `not settled: ${JSON.stringify({ stats: world.stats(), managed: managedStats(world) })}`,
  );
  assertOnce(world);
  const subscribing = lines.filter((l) => l.event.startsWith("subscribing through the managed subscription"));
  assert.equal(subscribing.length, TOPICS.length, JSON.stringify(subscribing));

  // A restart resumes where Salesforce's committed replay is: only what was published since arrives.
  for (const topic of TOPICS) world.org.faults.publish(topic, 100);
  const before = world.org.stats().streams.length;
  await runAppUntil(daemon(world, statePath, []), () => settled(world), 30_000);
  assert.ok(settled(world), JSON.stringify({ stats: world.stats(), managed: managedStats(world) }));
  assertOnce(world);
  const resumed = world.org
    .stats()
    .streams.slice(before)
    .filter((s) => s.managed);
  assert.deepEqual(
    resumed.map((s) => s.sent).sort(),
    TOPICS.map(() => 100),
    "the second run was sent only the new events",
  );
});

test("a commit Salesforce refuses is one ERROR line, and nothing is lost or copied", async (t) => {
  const world = await managedWorld(t, 200);
  const sub = managedDemoSubscription(TOPICS[0]!).developerName;
  world.org.faults.refuseNextCommits(sub, 3, "the commit service is unavailable (simulated)");
  const lines: Logged[] = [];
  // New events keep new commits coming (a refused one is also sent again, after a backoff of seconds).
  const refusedAll = (): boolean => managedStats(world).some((m) => m.refusedCommits >= 3);
  const publisher = setInterval(() => {
    if (!refusedAll()) world.org.faults.publish(TOPICS[0]!, 5);
  }, 100);
  try {
    await runAppUntil(
      daemon(world, join(tempDir(), "state.json"), lines),
      () => refusedAll() && settled(world),
      30_000,
    );
  } finally {
    clearInterval(publisher);
  }
  assert.ok(settled(world), JSON.stringify(managedStats(world)));
  assertOnce(world);
  const refused = lines.filter((l) => l.event.includes("refused to commit"));
  assert.equal(refused.length, 1, `one line for three refusals: ${JSON.stringify(refused)}`);
  assert.equal(refused[0]!.level, "error");
  assert.match(refused[0]!.event, new RegExp(`managed subscription ${sub} \\(${TOPICS[0]}\\)`));
  assert.match(refused[0]!.event, /the commit service is unavailable \(simulated\)/);
  assert.match(refused[0]!.event, /Nothing is lost/);
  assert.equal(managedStats(world).find((m) => m.developerName === sub)!.refusedCommits, 3);
});

test("a deleted subscription, a stopped one and one carrying another topic each end in one actionable line", async (t) => {
  const world = await managedWorld(t, 50);
  const [login, api] = TOPICS.map((topic) => managedDemoSubscription(topic).developerName) as [
    string,
    string,
  ];
  const lines: Logged[] = [];
  const app = daemon(world, join(tempDir(), "state.json"), lines);
  const stop = new AbortController();
  const running = app.run(stop.signal);
  const waitFor = async (what: string, cond: () => boolean): Promise<void> => {
    const deadline = Date.now() + 20_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}: ${JSON.stringify(lines)}`);
      await delay(25);
    }
  };
  try {
    await waitFor("delivery", () => Object.values(world.stats()).every((s) => s.delivered >= 50));
    world.org.faults.deleteManagedSubscription(login);
    world.org.faults.setManagedSubscriptionState(api, "STOP");
    await waitFor("both lines", () => lines.filter((l) => l.level === "error").length >= 2);
    // Retries go on (every 30 s here, with jitter): the lines are not repeated within the window.
    await delay(300);
  } finally {
    stop.abort();
    await running;
  }
  const errors = lines.filter((l) => l.level === "error");
  assert.equal(errors.length, 2, JSON.stringify(errors));
  const deleted = errors.find((l) => l.subscription === login)!;
  assert.match(deleted.event, new RegExp(`managed subscription ${login} \\(${TOPICS[0]}\\) does not exist`));
  assert.match(deleted.event, /create it \(docs\/pubsub\.md, "Managed subscriptions"\)/);
  const stopped = errors.find((l) => l.subscription === api)!;
  assert.match(stopped.event, /is stopped \(state STOP.*set its state to RUN/);

  // A subscription whose record names another topic than the config is not streamed at all.
  const world2 = await managedWorld(t, 20);
  world2.org.faults.deleteManagedSubscription(login);
  world2.org.faults.createManagedSubscription({
    developerName: login,
    topic: TOPICS[1]!,
    defaultReplay: "EARLIEST",
  });
  const lines2: Logged[] = [];
  const app2 = daemon(world2, join(tempDir(), "state.json"), lines2);
  await runAppUntil(app2, () => lines2.some((l) => l.level === "error"), 20_000);
  const mismatch = lines2.filter((l) => l.level === "error");
  assert.equal(mismatch.length, 1, JSON.stringify(mismatch));
  assert.match(
    mismatch[0]!.event,
    new RegExp(
      `managed subscription ${login} carries ${TOPICS[1]}, but sources.pubsub.managed_subscriptions says ${TOPICS[0]}: not subscribing`,
    ),
  );
  assert.equal(world2.stats()[TOPICS[0]!]?.delivered ?? 0, 0, "nothing labelled with the wrong topic");
});

test("a managed stream cut mid-run re-delivers from Salesforce's committed replay, and nothing is pushed twice", async (t) => {
  const world = await managedWorld(t, 300);
  world.loki.faults.stall();
  const lines: Logged[] = [];
  const app = daemon(world, join(tempDir(), "state.json"), lines);
  const stop = new AbortController();
  const running = app.run(stop.signal);
  const managedSent = (): number[] =>
    world.org
      .stats()
      .streams.filter((s) => s.managed)
      .map((s) => s.sent);
  try {
    const deadline = Date.now() + 20_000;
    while (managedSent().reduce((a, b) => a + b, 0) < 600 && Date.now() < deadline) await delay(25);
    // Nothing committed yet (Loki answers nothing), so the new streams start at the beginning again.
    world.org.faults.failStreams({ code: status.UNAVAILABLE, details: "connection dropped (simulated)" });
    while (managedSent().length < 4 && Date.now() < deadline) await delay(25);
    while (
      managedSent()
        .slice(2)
        .reduce((a, b) => a + b, 0) < 600 &&
      Date.now() < deadline
    )
      await delay(25);
    world.loki.faults.release();
    while (!settled(world) && Date.now() < deadline) await delay(50);
  } finally {
    stop.abort();
    await running;
  }
  assert.ok(settled(world), JSON.stringify({ stats: world.stats(), managed: managedStats(world) }));
  assert.deepEqual(managedSent(), [300, 300, 300, 300], "the second streams re-delivered every event");
  assertOnce(world);
});

test("a clean stop as soon as Loki holds everything still commits the drain's last batch on Salesforce", async (t) => {
  const world = await managedWorld(t, 500);
  // Each push answered 150 ms late: the stop lands while the last pushes are still unanswered.
  world.loki.faults.setLatency(150);
  const inLoki = (): boolean => Object.values(world.stats()).every((s) => s.delivered >= s.emitted);
  await runAppUntil(daemon(world, join(tempDir(), "state.json"), []), inLoki, 30_000, 10);
  const { topics } = world.org.stats();
  for (const m of managedStats(world)) {
    assert.equal(m.committed, topics[m.topic]!.maxReplayId, `${m.developerName}: ${JSON.stringify(m)}`);
    assert.equal(m.subscribed, false, `${m.developerName}'s stream closed after the stop`);
  }
  assertOnce(world);
});

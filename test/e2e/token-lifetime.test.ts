// Tokens minted per session lifetime by whole processes (#38), counted at the simulated org's OAuth
// endpoint. The org's session timeout runs on a manual clock only the test moves; the processes run on
// the real clock with the default token_ttl (1 h), which never runs out here, so every re-mint below is
// the refusal path: the org answers 401 INVALID_SESSION_ID (REST) or UNAUTHENTICATED (Pub/Sub), the first
// source refused drops the shared token (compare-and-clear) and mints, and every other source of the
// process picks up that one. One mint per org per lifetime S means 3600 s / S an hour: with S = 10 min,
// 6 an hour; at Salesforce's default 2 h timeout the 1 h token_ttl re-mints first, 60/59 an hour
// (test/salesforce/token-lifetime.test.ts measures those on one clock). An HA standby mints once, at its
// start-up auth probe, and then not until it leads; `doctor` and `backfill` mint once per run.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { validateConfig } from "../../src/config/load.ts";
import { createApp, type App } from "../../src/daemon/app.ts";
import { DEMO_TOPICS, startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { fastPolls, mark, nextSession, resumed } from "../support/sessions.ts";
import { until } from "../support/sharded.ts";
import { waitFor } from "../support/timing.ts";

const SESSION_MS = 10 * 60_000;
/** One simulated hour of 10-minute sessions. */
const LIFETIMES = 6;

async function world(clock: ManualClock): Promise<DemoWorld> {
  return startDemoWorld({
    eventsPerTopic: 5,
    polling: {
      objects: { ApiAnomalyEventStore: { records: 5 } },
      dailyEventLogFiles: { types: { Report: 10 }, days: 1 },
      apexLogs: 3,
      traceFlags: 1,
    },
    clock,
    sessionTimeoutMs: SESSION_MS,
  });
}

function streamed(w: DemoWorld): boolean {
  return Object.values(w.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted);
}

/**
 * The org's clock starts two hours back, so that an hour of sessions later its events are still dated
 * in the past (Loki refuses entries dated more than 10 minutes ahead).
 */
function orgClock(): ManualClock {
  return new ManualClock({ startMs: Date.now() - 2 * 3_600_000, auto: false });
}

test("one daemon with all four source kinds mints once per session lifetime, not once per source", async (t) => {
  const clock = orgClock();
  const w = await world(clock);
  t.after(() => w.stop());
  const tree = w.config(join(tempDir(), "state.json"));
  fastPolls(tree.sources as Record<string, unknown>);
  const app = createApp(validateConfig(tree));
  const stop = new AbortController();
  const running = app.run(stop.signal);
  try {
    await waitFor(() => streamed(w) && w.org.rest.stats.queries.length > 0, "the first delivery", 30_000);
    assert.equal(w.org.stats().mints, 1, "one token at start-up for every source");
    const perLifetime: number[] = [];
    const refusals: number[] = [];
    for (let k = 1; k <= LIFETIMES; k++) {
      const before = w.org.stats().mints;
      const refused = w.org.rest.stats.unauthorized;
      await nextSession(w.org, clock, SESSION_MS, {
        queries: ["FROM EventLogFile", "FROM ApexLog", "FROM ApiAnomalyEventStore"],
        topics: DEMO_TOPICS,
        delivered: () => streamed(w),
      });
      perLifetime.push(w.org.stats().mints - before);
      refusals.push(w.org.rest.stats.unauthorized - refused);
    }
    const mints = w.org.stats().mints;
    t.diagnostic(
      `daemon, 4 source kinds, ${LIFETIMES} sessions of ${SESSION_MS / 60_000} min: ${mints} mints ` +
        `(1 at start, then ${perLifetime.join(",")} per session) = ${3_600_000 / SESSION_MS}/h; ` +
        `every Pub/Sub stream ended UNAUTHENTICATED each session; REST calls refused 401 per session: ` +
        `${refusals.join(",")} (a polling source that comes after the streams' re-mint finds the new token)`,
    );
    assert.deepEqual(perLifetime, Array<number>(LIFETIMES).fill(1), "one mint per session, shared by all");
  } finally {
    stop.abort();
    await running;
  }
});

test("doctor and backfill mint one token per run", async (t) => {
  const clock = orgClock();
  const w = await world(clock);
  t.after(() => w.stop());
  const dir = tempDir("sf2loki-tokens-");
  const path = writeFile(dir, "sf2loki.yaml", stringify(w.config(join(dir, "state.json"))));
  const runs: Record<string, number[]> = { doctor: [], backfill: [] };
  const since = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  for (let run = 0; run < 2; run++) {
    for (const [name, args] of [
      ["doctor", ["doctor", "--config", path]],
      ["backfill", ["backfill", "--since", since, "--config", path]],
    ] as const) {
      const before = w.org.stats().mints;
      const r = await cli([...args]);
      assert.ok(r.code === 0 || (name === "doctor" && r.code === 1), `${name}: ${r.stdout}${r.stderr}`);
      runs[name]!.push(w.org.stats().mints - before);
    }
  }
  t.diagnostic(`mints per run: doctor ${runs.doctor!.join(",")}; backfill ${runs.backfill!.join(",")}`);
  assert.deepEqual(runs, { doctor: [1, 1], backfill: [1, 1] });
});

/** This process's own count of tokens it minted (its sf2loki_auth_refreshes), single-org. */
async function refreshes(app: App): Promise<number> {
  const text = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
  return Number(/^sf2loki_auth_refreshes_total(?:\{[^}]*\})? (\d+)/m.exec(text)?.[1] ?? 0);
}

async function leads(app: App): Promise<boolean> {
  if (app.healthUrl() === undefined) return false;
  const text = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
  return /^sf2loki_leader 1/m.test(text);
}

test("HA: a standby mints once at start-up and then not until it leads", async (t) => {
  const clock = orgClock();
  const w = await world(clock);
  t.after(() => w.stop());
  const dir = tempDir("sf2loki-ha-tokens-");
  const replica = (name: string): { app: App; stop: AbortController; running: Promise<void> } => {
    const tree = w.config(join(dir, "state.json"));
    fastPolls(tree.sources as Record<string, unknown>);
    tree.coordinate = {
      type: "file_lease",
      file_lease: { path: join(dir, "leader.lease"), ttl: "3s", renew_interval: "1s", holder_id: name },
    };
    const app = createApp(validateConfig(tree));
    const stop = new AbortController();
    return { app, stop, running: app.run(stop.signal) };
  };
  const want = {
    queries: ["FROM EventLogFile", "FROM ApexLog", "FROM ApiAnomalyEventStore"],
    topics: DEMO_TOPICS,
    delivered: () => streamed(w),
  };
  const a = replica("pod-a");
  const b = replica("pod-b");
  try {
    await waitFor(() => streamed(w), "the first delivery", 30_000);
    const [leader, standby] = (await leads(a.app)) ? [a, b] : [b, a];
    assert.ok(await leads(leader.app));
    await waitFor(() => standby.app.healthUrl() !== undefined, "the standby's health server", 30_000);
    await waitFor(() => w.org.stats().mints === 2, "both replicas probed their org", 30_000);
    for (let k = 1; k <= 3; k++) await nextSession(w.org, clock, SESSION_MS, want);
    const split = { leader: await refreshes(leader.app), standby: await refreshes(standby.app) };
    assert.deepEqual(split, { leader: 4, standby: 1 }, "only the leader re-mints");
    // The leader stops; the standby's start-up token is three sessions old, so it mints once on taking over.
    const before = w.org.stats().mints;
    leader.stop.abort();
    await leader.running;
    const since = mark(w.org);
    await until(() => leads(standby.app), "the standby takes over");
    await resumed(since, want);
    const taken = await refreshes(standby.app);
    t.diagnostic(
      `HA, 2 replicas, 3 sessions of ${SESSION_MS / 60_000} min: leader ${split.leader} mints (1 at start + 1 per session), ` +
        `standby ${split.standby} (its start-up probe); on take-over the standby minted ${taken - split.standby} more; ` +
        `org endpoint: ${w.org.stats().mints}`,
    );
    assert.equal(w.org.stats().mints, before + 1, "the take-over costs one mint");
    assert.equal(taken, 2);
  } finally {
    for (const r of [a, b]) r.stop.abort();
    await Promise.all([a.running, b.running]);
  }
});

// Tokens minted by sharded replicas (#38), counted at each simulated org's OAuth endpoint and in each
// replica's own sf2loki_auth_refreshes. Two replicas, two orgs on one manual clock whose session timeout
// only the test ends; the replicas run on the real clock with the default token_ttl (1 h), which never
// runs out here. Per session lifetime S each replica mints once per org it holds and never for an org it
// does not; an org that moves costs one mint at its new holder. Per hour: (orgs held) x 3600 s / S.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { createApp, type App } from "../../src/daemon/app.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { shardedConfig, space, until } from "../support/sharded.ts";
import { fastPolls, mark, resumed } from "../support/sessions.ts";
import { startTwoOrgs, type TwoOrgs } from "../support/two-orgs.ts";
import { tempDir } from "../support/tmp.ts";

const SESSION_MS = 10 * 60_000;
const ORGS = ["prod", "emea"] as const;
const POLLED = { queries: ["FROM LoginEvent", "FROM ApexLog"], topics: [] };

interface Replica {
  name: string;
  app: App;
  stop: AbortController;
  running: Promise<void>;
}

async function statusOf(app: App): Promise<string[]> {
  const body = (await (await fetch(`${app.healthUrl()!}/statusz`)).json()) as {
    sharding: { shards: { org: string }[] };
  };
  return body.sharding.shards.map((s) => s.org).sort();
}

/** This replica's own count of tokens it minted for `org` (its sf2loki_auth_refreshes). */
async function refreshes(app: App, org: string): Promise<number> {
  const text = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
  const m = new RegExp(`^sf2loki_auth_refreshes_total\\{[^}]*org="${org}"[^}]*\\} (\\d+)`, "m").exec(text);
  return m ? Number(m[1]) : 0;
}

async function table(replicas: Replica[]): Promise<Record<string, Record<string, number>>> {
  const out: Record<string, Record<string, number>> = {};
  for (const r of replicas) {
    out[r.name] = {};
    for (const org of ORGS) out[r.name]![org] = await refreshes(r.app, org);
  }
  return out;
}

test("sharded replicas mint once per org they hold per session lifetime; a move costs one", async (t) => {
  const clock = new ManualClock({ startMs: Date.now(), auto: false });
  const emu = await K8sEmulator.start();
  t.after(() => emu.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const orgs: TwoOrgs = await startTwoOrgs(t, {
    topics: [],
    eventsPerTopic: 0,
    polling: { objects: { LoginEvent: { records: 10 } }, apexLogs: 3 },
    rest: { clock },
    sessionTimeoutMs: SESSION_MS,
  });
  const config = shardedConfig(orgs, loki.pushUrl, join(tempDir(), "state.json"), fastPolls);
  const replicas: Replica[] = ["pod-a", "pod-b"].map((name) => {
    const app = createApp(config, {
      healthAddr: "127.0.0.1:0",
      shardSpace: space(emu, name),
      host: { hostname: name, pid: 1, env: { HOSTNAME: name } },
    });
    const stop = new AbortController();
    return { name, app, stop, running: app.run(stop.signal) };
  });
  const mints = (): Record<string, number> =>
    Object.fromEntries(ORGS.map((org) => [org, orgs[org].stats().mints]));
  const log: string[] = [];
  try {
    await until(async () => {
      if (replicas.some((r) => r.app.healthUrl() === undefined)) return false;
      const held = await Promise.all(replicas.map((r) => statusOf(r.app)));
      return held.every((h) => h.length === 1);
    }, "each replica holds one org");
    const holder: Record<string, Replica> = {};
    for (const r of replicas) holder[(await statusOf(r.app))[0]!] = r;
    await Promise.all(ORGS.map((org) => resumed(mark(orgs[org]), POLLED)));
    assert.deepEqual(mints(), { prod: 1, emea: 1 }, "one token per org at start-up");
    log.push(`start: ${JSON.stringify(await table(replicas))}`);

    // Three session lifetimes with the orgs split: each replica mints once per lifetime, for its org.
    for (let k = 1; k <= 3; k++) {
      const marks = ORGS.map((org) => mark(orgs[org]));
      clock.advance(SESSION_MS);
      await Promise.all(marks.map((m) => resumed(m, POLLED)));
      assert.deepEqual(mints(), { prod: 1 + k, emea: 1 + k }, `session ${k}`);
    }
    const split = await table(replicas);
    log.push(`after 3 sessions, split: ${JSON.stringify(split)}`);
    for (const org of ORGS) {
      for (const r of replicas)
        assert.equal(split[r.name]![org], holder[org] === r ? 4 : 0, `${r.name}/${org}`);
    }

    // pod-a stops: its org moves to pod-b, which mints for it once.
    const [leaving, survivor] = replicas as [Replica, Replica];
    const moving = ORGS.find((org) => holder[org] === leaving)!;
    const stays = ORGS.find((org) => org !== moving)!;
    const before = mints();
    const movedMark = mark(orgs[moving]);
    leaving.stop.abort();
    await leaving.running;
    await until(async () => (await statusOf(survivor.app)).length === 2, `${survivor.name} holds both`);
    await resumed(movedMark, POLLED);
    assert.deepEqual(
      mints(),
      { ...before, [moving]: before[moving]! + 1 },
      "the move costs one mint, for the org that moved",
    );
    assert.equal(await refreshes(survivor.app, moving), 1, `${survivor.name} minted once for ${moving}`);

    // One more lifetime: the survivor mints once per org it now holds.
    const marks = ORGS.map((org) => mark(orgs[org]));
    const held = mints();
    clock.advance(SESSION_MS);
    await Promise.all(marks.map((m) => resumed(m, POLLED)));
    assert.deepEqual(mints(), { prod: held.prod! + 1, emea: held.emea! + 1 }, "one per org per lifetime");
    const after = await table([survivor]);
    log.push(`after the move and one more session: ${JSON.stringify(after)}`);
    assert.equal(after[survivor.name]![moving], 2);
    assert.equal(after[survivor.name]![stays], 5);
    t.diagnostic(log.join("; "));
    t.diagnostic(`org endpoint mints: ${JSON.stringify(mints())}`);
  } finally {
    for (const r of replicas) r.stop.abort();
    await Promise.all(replicas.map((r) => r.running));
  }
});

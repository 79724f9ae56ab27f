// Two sharded daemons in one process, two simulated orgs, leases on the loopback Kubernetes API: each
// daemon ends up running one org, both orgs' data reaches Loki, every shard's checkpoints land in its
// own document seeded from the shared one (which is left as it was), /statusz and /metrics say who
// holds what, and a stop releases every shard lease and both membership leases.
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { createApp, type App } from "../../src/daemon/app.ts";
import { deadLetterDirectory, FileDeadLetterStore } from "../../src/deadletter/file-store.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import { K8sEmulator } from "../support/k8s-emulator.ts";
import { NAME, NS, shardedConfig, space, until } from "../support/sharded.ts";
import { captureLogger } from "../state/helpers/capture-logger.ts";
import { startTwoOrgs } from "../support/two-orgs.ts";
import { tempDir } from "../support/tmp.ts";
import { systemClock } from "../../src/util/clock.ts";

test("two sharded daemons split two orgs, each in its own seeded document, and release all on stop", async (t) => {
  const emu = await K8sEmulator.start();
  t.after(() => emu.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const orgs: Record<string, SimOrg> = await startTwoOrgs(t, {
    topics: [],
    eventsPerTopic: 0,
    polling: { objects: { LoginEvent: { records: 30 } }, apexLogs: 10 },
  });
  const dir = tempDir();
  const shared = join(dir, "state.json");
  // The pre-sharding document: one key per org, plus a single-org key the first org inherits.
  const before = JSON.stringify({
    "org=prod:test:marker": "prod-was-here",
    "org=emea:test:marker": "emea-was-here",
    "legacy:marker": "single-org-days",
    "egress:budget": '{"day":"2026-12-01","bytes":1}',
    "egress:budget:emea": '{"day":"2026-12-01","bytes":2}',
    __fence_epoch__: "7",
  });
  writeFileSync(shared, before);
  const config = shardedConfig(orgs, loki.pushUrl, shared);
  const apps: App[] = [];
  const runs: Promise<void>[] = [];
  const stop = new AbortController();
  for (const replica of ["pod-a", "pod-b"]) {
    const app = createApp(config, {
      pollOnce: true,
      healthAddr: "127.0.0.1:0",
      shardSpace: space(emu, replica),
      host: { hostname: replica, pid: 1, env: { HOSTNAME: replica } },
    });
    apps.push(app);
    runs.push(app.run(stop.signal));
  }
  try {
    const statusOf = async (
      app: App,
    ): Promise<{
      sharding: {
        replica: string;
        members: string[];
        fair_share: number;
        shards: { org: string; epoch: number }[];
      };
    }> => (await (await fetch(`${app.healthUrl()!}/statusz`)).json()) as never;
    await until(async () => {
      if (apps.some((a) => a.healthUrl() === undefined)) return false;
      const s = await Promise.all(apps.map(statusOf));
      return s.every((x) => x.sharding.shards.length === 1);
    }, "each daemon holds one org");
    await until(
      () => ["prod", "emea"].every((org) => loki.entries({ org }).length >= 40),
      "both orgs delivered",
    );

    const statuses = await Promise.all(apps.map(statusOf));
    const held = statuses.map((s) => s.sharding.shards[0]!.org).sort();
    assert.deepEqual(held, ["emea", "prod"]);
    for (const s of statuses) {
      assert.deepEqual(s.sharding.members, ["pod-a", "pod-b"]);
      assert.equal(s.sharding.fair_share, 1);
      // The shard's epoch continues above the shared document's (#99 floors read the shard's own).
      assert.ok(s.sharding.shards[0]!.epoch >= 1);
    }
    for (const app of apps) {
      assert.equal((await fetch(`${app.healthUrl()!}/readyz`)).status, 200);
      const metrics = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
      assert.match(metrics, /sf2loki_shard_leader\{org="prod"\} [01]/);
      assert.match(metrics, /sf2loki_shard_leader\{org="emea"\} [01]/);
      assert.match(metrics, /sf2loki_shard_members 2/);
      assert.match(metrics, /sf2loki_shard_fair_share 1/);
      assert.match(metrics, /sf2loki_shard_moves_total\{org="\w+",reason="acquired"\} 1/);
      // Each shard's own pipeline and store series carry its org, so two shards never overwrite.
      assert.match(metrics, /sf2loki_checkpoint_store_up\{org="(prod|emea)"\} 1/);
    }
    // Seeded from the shared document: the org's own keys, and the legacy ones for the first org only.
    const doc = (org: string): Record<string, string> => {
      try {
        return JSON.parse(readFileSync(join(dir, `state-${org}.json`), "utf8")) as Record<string, string>;
      } catch {
        return {};
      }
    };
    const committed = (org: string): boolean =>
      Object.keys(doc(org)).some((k) => k.startsWith(`org=${org}:`) && k !== `org=${org}:test:marker`);
    await until(() => committed("prod") && committed("emea"), "both shards committed their own checkpoints");
    const prod = doc("prod");
    const emea = doc("emea");
    assert.equal(prod["org=prod:test:marker"], "prod-was-here");
    assert.equal(prod["legacy:marker"], "single-org-days");
    assert.equal(prod["org=emea:test:marker"], undefined);
    assert.equal(emea["org=emea:test:marker"], "emea-was-here");
    assert.equal(emea["legacy:marker"], undefined);
    // Budgets: an org's own destination's count comes along; the deployment-wide one stays behind.
    assert.equal(emea["egress:budget:emea"], '{"day":"2026-12-01","bytes":2}');
    assert.equal(prod["egress:budget"], undefined);
    assert.equal(prod["egress:budget:emea"], undefined);
    assert.ok(prod.__fence_epoch__ && emea.__fence_epoch__, "each document carries its own fence epoch");
    assert.equal(readFileSync(shared, "utf8"), before, "the shared document is never written");
  } finally {
    stop.abort();
    await Promise.all(runs);
  }
  const holderOf = (name: string): unknown =>
    (emu.lease(NS, name) as { spec?: { holderIdentity?: string } } | undefined)?.spec?.holderIdentity ?? "";
  for (const name of [`${NAME}-prod`, `${NAME}-emea`, `${NAME}-member-pod-a`, `${NAME}-member-pod-b`]) {
    assert.ok(emu.lease(NS, name), `${name} exists`);
    assert.equal(holderOf(name), "", `${name} released on stop`);
  }
});

test("one daemon, two orgs: losing one shard stops that org's pipeline only, and it comes back", async (t) => {
  const emu = await K8sEmulator.start();
  t.after(() => emu.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const orgs: Record<string, SimOrg> = await startTwoOrgs(t, {
    topics: [],
    eventsPerTopic: 0,
    polling: { objects: { LoginEvent: { records: 10 } } },
  });
  const config = shardedConfig(orgs, loki.pushUrl, join(tempDir(), "state.json"));
  const log = captureLogger();
  const app = createApp(config, {
    pollOnce: true,
    healthAddr: "127.0.0.1:0",
    logger: log.logger,
    shardSpace: space(emu, "solo"),
    host: { hostname: "solo", pid: 1, env: { HOSTNAME: "solo" } },
  });
  const stop = new AbortController();
  const running = app.run(stop.signal);
  try {
    const held = async (): Promise<string[]> =>
      (
        (await (await fetch(`${app.healthUrl()!}/statusz`)).json()) as {
          sharding: { shards: { org: string }[] };
        }
      ).sharding.shards
        .map((s) => s.org)
        .sort();
    await until(
      async () => app.healthUrl() !== undefined && (await held()).length === 2,
      "solo holds both orgs",
    );
    const epochBefore = (emu.lease(NS, `${NAME}-prod`) as { spec: { leaseTransitions: number } }).spec
      .leaseTransitions;
    // Someone else takes prod's Lease behind solo's back: a newer epoch, just renewed.
    emu.seed(NS, `${NAME}-prod`, {
      metadata: { labels: { "sf2loki.io/lease-set": NAME, "sf2loki.io/lease-role": "shard" } },
      spec: {
        holderIdentity: "intruder",
        leaseTransitions: epochBefore + 10,
        leaseDurationSeconds: 3,
        renewTime: new Date().toISOString().replace("Z", "000Z"),
      },
    });
    await until(async () => (await held()).join() === "emea", "solo loses prod and keeps emea");
    const metrics = await (await fetch(`${app.healthUrl()!}/metrics`)).text();
    assert.match(metrics, /sf2loki_shard_leader\{org="prod"\} 0/);
    assert.match(metrics, /sf2loki_shard_leader\{org="emea"\} 1/);
    assert.match(metrics, /sf2loki_shard_moves_total\{org="prod",reason="lost"\} 1/);
    // The intruder never renews (and is no member): a ttl later prod is solo's again, at a newer epoch.
    await until(
      async () => (await held()).length === 2,
      "solo takes prod back once the intruder's lease expires",
      15_000,
    );
    const epochAfter = (emu.lease(NS, `${NAME}-prod`) as { spec: { leaseTransitions: number } }).spec
      .leaseTransitions;
    assert.ok(epochAfter > epochBefore + 10, `prod's epoch moved past the intruder's: ${epochAfter}`);
  } finally {
    stop.abort();
    await running;
  }
  const stops = log.lines.filter(
    (l) => /^shard lost|^releasing shard/.test(l.msg) || l.msg === "shard lost: its pipeline stops",
  );
  const orgOf = (l: Record<string, unknown>): unknown => l.org ?? l.shard;
  const emeaStops = stops.filter((l) => orgOf(l) === "emea");
  // emea ran untouched until the final stop: one clean release at shutdown, no loss.
  assert.deepEqual(
    emeaStops.map((l) => l.msg),
    ["releasing shard: draining and committing, then releasing its lease"],
  );
  assert.ok(stops.some((l) => orgOf(l) === "prod" && l.msg === "shard lost: its pipeline stops"));
});

test("a sharded daemon keeps every shard's dead letters in the deployment's one store, the one the CLI reads", async (t) => {
  const emu = await K8sEmulator.start();
  t.after(() => emu.close());
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  loki.faults.rejectLinesContaining("{"); // every JSON line is refused for good
  const orgs: Record<string, SimOrg> = await startTwoOrgs(t, {
    topics: [],
    eventsPerTopic: 0,
    polling: { objects: { LoginEvent: { records: 3 } } },
  });
  const statePath = join(tempDir(), "state.json");
  const config = shardedConfig(orgs, loki.pushUrl, statePath);
  const app = createApp(config, {
    pollOnce: true,
    healthAddr: "127.0.0.1:0",
    shardSpace: space(emu, "solo"),
    host: { hostname: "solo", pid: 1, env: { HOSTNAME: "solo" } },
  });
  const stop = new AbortController();
  const running = app.run(stop.signal);
  // Where `sf2loki deadletter` looks with this config: next to the configured state, not a shard's.
  const store = new FileDeadLetterStore(
    deadLetterDirectory(statePath),
    { maxBytes: 1 << 20, maxEntries: 0 },
    systemClock,
  );
  const keptOrgs = async (): Promise<string[]> =>
    [...new Set((await store.list(new AbortController().signal)).map((r) => r.org ?? ""))].sort();
  try {
    await until(async () => (await keptOrgs()).join() === "emea,prod", "both shards' letters kept");
    const status = (await (await fetch(`${app.healthUrl()!}/statusz`)).json()) as {
      deadletter: { location: string };
    };
    assert.equal(status.deadletter.location, deadLetterDirectory(statePath));
  } finally {
    stop.abort();
    await running;
  }
});

// The polling sources end to end over real sockets: simulated org (OAuth + REST: SOQL, EventLogFile
// CSVs, ApexLog bodies, limits) → sf2loki (app, pipeline, Loki sink, file store) → Loki receiver.
// Every run is a finite one (pollOnce): each source runs one cycle, and the app ends once everything
// it shipped is committed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { deepMerge } from "../../src/config/env.ts";
import {
  pollingDelivery,
  pollingMissingIds,
  pollingSources,
  simSalesforceConfig,
} from "../../src/sim/demo-polling.ts";
import { DEMO_SECRET, startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import {
  appendApexLogs,
  appendElfFile,
  appendObjectRecords,
  objectIdPrefix,
  simId,
  type SimPollingData,
} from "../../src/sim/salesforce-rest/index.ts";
import { startSimOrg, type SimOrg } from "../../src/sim/salesforce/index.ts";
import { systemClock, type Clock } from "../../src/util/clock.ts";
import { tempDir } from "../support/tmp.ts";

/** Real time, zero retry jitter: transient faults are retried at once, and runs are repeatable. */
const CLOCK: Clock = { ...systemClock, random: () => 0 };

async function runOnce(config: Record<string, unknown>, stopWhen?: () => boolean): Promise<void> {
  const app = createApp(validateConfig(config), { pollOnce: true, clock: CLOCK });
  const stop = new AbortController();
  const poll = stopWhen
    ? setInterval(() => {
        if (stopWhen()) stop.abort();
      }, 10)
    : undefined;
  try {
    await app.run(stop.signal);
  } finally {
    clearInterval(poll);
  }
}

async function pollingWorld(polling: SimPollingData): Promise<DemoWorld> {
  return startDemoWorld({ eventsPerTopic: 0, topics: [], polling });
}

function stateOf(path: string): Record<string, string> {
  return JSON.parse(readFileSync(path, "utf8")) as Record<string, string>;
}

function assertComplete(world: DemoWorld, maxDuplicates: number): void {
  const stats = world.pollingStats();
  const missing = pollingMissingIds(world.org, world.loki, 5);
  let duplicates = 0;
  for (const [key, s] of Object.entries(stats)) {
    assert.ok(s.emitted > 0, key);
    assert.equal(s.missing, 0, `${key}: missing ${missing[key]?.join(", ")}`);
    duplicates += s.duplicates;
  }
  assert.ok(duplicates <= maxDuplicates, `${duplicates} duplicates, at most ${maxDuplicates} expected`);
}

const MIN = 60_000;

test("every source delivers every record exactly once, a tie of 500 included, and a restart re-ships nothing", async (t) => {
  const world = await pollingWorld({
    objects: { LoginEvent: { records: 3_000, tie: 500 } },
    eventLogFiles: { API: { rows: 20_000, files: 3 }, URI: { rows: 5_000 } },
    apexLogs: 450,
  });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const config = world.config(statePath);
  const logins = world.org.rest.data.objects.LoginEvent!;
  assert.equal(new Set(logins.map((r) => r.EventDate)).size, 3_000 - 499, "500 records share one EventDate");

  await runOnce(config);
  assert.deepEqual(world.pollingStats(), {
    "eventlog_objects:LoginEvent": { emitted: 3_000, delivered: 3_000, duplicates: 0, missing: 0 },
    "eventlogfile:API": { emitted: 20_000, delivered: 20_000, duplicates: 0, missing: 0 },
    "eventlogfile:URI": { emitted: 5_000, delivered: 5_000, duplicates: 0, missing: 0 },
    apexlog: { emitted: 450, delivered: 450, duplicates: 0, missing: 0 },
  });
  assert.deepEqual(Object.keys(stateOf(statePath)).sort(), [
    "apexlog",
    "eventlog_objects:LoginEvent",
    "eventlogfile:API",
    "eventlogfile:URI",
  ]);
  const line = world.loki.entries({ source: "eventlogfile", event_type: "API" })[0]!;
  assert.deepEqual(line.labels, {
    job: "sf2loki",
    service_name: "sf2loki",
    environment: "production",
    sf_org_id: world.org.orgId,
    source: "eventlogfile",
    event_type: "API",
  });

  // New records while sf2loki is down; a restart ships exactly those.
  const now = Date.now();
  const data = world.org.rest.data;
  appendObjectRecords(data, "LoginEvent", 300, { prefix: objectIdPrefix(0), fromMs: now - MIN, toMs: now });
  appendElfFile(data, "API", 4_000, now - 9 * MIN);
  appendApexLogs(data, 60, now - MIN, now - 1000);
  const accepted = world.loki.counts.accepted;
  await runOnce(config);
  assert.equal(world.loki.counts.accepted - accepted, 300 + 4_000 + 60);
  assertComplete(world, 0);

  // Nothing new: nothing shipped.
  await runOnce(config);
  assert.equal(world.loki.counts.accepted - accepted, 4_360);
});

test("stopped mid-cycle and restarted: nothing lost, duplicates bounded by a file and the in-flight window", async (t) => {
  const world = await pollingWorld({
    objects: { LoginEvent: { records: 6_000, tie: 500 } },
    eventLogFiles: { API: { rows: 100_000, files: 10 } },
    apexLogs: 600,
  });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const config = world.config(statePath);

  await runOnce(config, () => world.loki.counts.accepted >= 20_000);
  const first = world.pollingStats();
  assert.ok(first["eventlogfile:API"]!.delivered < 100_000, "the first run stopped mid-cycle");

  await runOnce(config);
  // A stop mid-file replays that file (10 000 rows: rows carry the pre-file cursor until the last);
  // per-record cursors bound the rest by the bulk lane's batches pushed and not committed (max_uncommitted, 16 x 1000).
  assertComplete(world, 10_000 + 16_000);
});

test("5xx, throttling and a connection cut mid-CSV: contained, and the next run completes the data", async (t) => {
  const world = await pollingWorld({
    objects: { LoginEvent: { records: 1_000 } },
    eventLogFiles: { API: { rows: 9_000, files: 3 }, URI: { rows: 2_000 } },
    apexLogs: 100,
  });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const config = deepMerge(world.config(statePath), {
    sources: { eventlogfile: { concurrency: 1 } },
  }) as Record<string, unknown>;
  const faults = world.org.rest.faults;
  // Retried inside one call: invisible in the result.
  faults.add({ route: "query", kind: "server_error", times: 2 });
  // The second API file's body (3 000 rows) dies after 300 KB, about 1 000 rows in.
  const secondApiFile = simId("0AT", 2);
  faults.add({
    route: "elf_csv",
    kind: "cut",
    times: 1,
    afterBytes: 300_000,
    match: (p) => p.includes(secondApiFile),
  });
  // The URI listing is refused for the API budget: ELF stops listing for this cycle.
  faults.add({
    route: "query",
    kind: "throttle",
    times: 1,
    match: (p) => decodeURIComponent(p).includes("EventType='URI'"),
  });
  // One ApexLog body keeps failing (past the client's retries): the cycle ends before it.
  faults.add({
    route: "apexlog_body",
    kind: "server_error",
    times: 3,
    match: (p) => p.includes("07LSIM000000000040"),
  });

  await runOnce(config);
  assert.deepEqual(
    [faults.fired.server_error, faults.fired.cut, faults.fired.throttle],
    [5, 1, 1],
    "every fault fired",
  );
  const first = world.pollingStats();
  assert.equal(first["eventlog_objects:LoginEvent"]!.missing, 0, "5xx retried transparently");
  const api = first["eventlogfile:API"]!;
  assert.ok(api.delivered > 3_000 && api.delivered < 6_000, `first file whole, second cut: ${api.delivered}`);
  assert.equal(first["eventlogfile:URI"]!.delivered, 0, "throttled type waits for the next cycle");
  assert.equal(first.apexlog!.delivered, 40, "ApexLog stops before the failing body (#93)");

  await runOnce(config);
  // The cut file's rows that arrived before the cut are read again, found in Loki by the resume's
  // lookups (a re-read ELF row serialises byte for byte as its first push did) and not sent twice.
  assertComplete(world, 3_000);
  assert.equal(world.pollingStats()["eventlogfile:API"]!.duplicates, 0);
  assert.ok(api.delivered > 3_000, "the second run re-read rows the first had delivered");
});

test("two orgs in one process: per-org keys and labels, each org's data complete, limits polled per org", async (t) => {
  const loki = await startLokiReceiver();
  t.after(() => loki.stop());
  const spec: SimPollingData = {
    objects: { LoginEvent: { records: 1_500, tie: 500 } },
    eventLogFiles: { API: { rows: 5_000, files: 2 } },
    apexLogs: 120,
  };
  const orgs: Record<string, SimOrg> = {};
  for (const [name, orgId] of [
    ["prod", "00DSIMPROD0000001A"],
    ["emea", "00DSIMEMEA0000001A"],
  ] as const) {
    orgs[name] = await startSimOrg({ orgId, clientSecret: DEMO_SECRET, polling: spec });
    t.after(() => orgs[name]!.stop());
  }
  const statePath = join(tempDir(), "state.json");
  const config = {
    orgs: Object.entries(orgs).map(([name, org]) => ({
      name,
      salesforce: {
        ...simSalesforceConfig(org, DEMO_SECRET),
        ...(name === "prod" ? { limits: { enabled: true } } : {}),
      },
      sources: pollingSources(org.rest.data),
    })),
    sink: { loki: { url: loki.pushUrl, batch: { flush_interval: "200ms" } } },
    state: { file: { path: statePath } },
    service: { health_addr: "127.0.0.1:0" },
  };

  await runOnce(config);
  for (const [name, org] of Object.entries(orgs)) {
    const stats = pollingDelivery(org, loki, { org: name });
    assert.equal(Object.keys(stats).length, 3, name);
    for (const [key, s] of Object.entries(stats)) {
      assert.equal(s.missing, 0, `${name} ${key}`);
      assert.equal(s.duplicates, 0, `${name} ${key}`);
    }
    const lines = loki.entries({ org: name });
    assert.ok(lines.every((e) => e.labels.sf_org_id === org.orgId && e.labels.environment === "production"));
  }
  const entries = loki.entries();
  assert.equal(entries.length, 2 * (1_500 + 5_000 + 120));
  assert.ok(
    entries.every((e) => e.labels.org === "prod" || e.labels.org === "emea"),
    "an org label on every line",
  );
  assert.deepEqual(Object.keys(stateOf(statePath)).sort(), [
    "org=emea:apexlog",
    "org=emea:eventlog_objects:LoginEvent",
    "org=emea:eventlogfile:API",
    "org=prod:apexlog",
    "org=prod:eventlog_objects:LoginEvent",
    "org=prod:eventlogfile:API",
  ]);
  assert.ok(orgs.prod!.rest.stats.limitsCalls >= 1, "prod's limits were polled while leading");
  assert.equal(orgs.emea!.rest.stats.limitsCalls, 0, "emea has limits off");
});

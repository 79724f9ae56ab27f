// enrich.users end to end (#38): one daemon with all four source kinds against the simulated org,
// whose User object names every user its events, EventLogFile rows, event objects and ApexLogs carry.
// Judged at the receiving Loki: which entries carry the user's fields, and what it cost Salesforce.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { createApp } from "../../src/daemon/app.ts";
import { createLogger } from "../../src/obs/logger.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import type { AcceptedEntry } from "../../src/sim/loki-store.ts";
import { SIM_USERS, simUser, simUserId, simUserId15 } from "../../src/sim/salesforce-rest/users.ts";
import { runAppUntil } from "../support/run-app.ts";
import { tempDir } from "../support/tmp.ts";

/** The sim's users by every id spelling its data uses (18 characters; ELF's 15). */
const DIRECTORY = new Map<string, Record<string, unknown>>();
for (let i = 0; i < SIM_USERS; i++) {
  DIRECTORY.set(simUserId(i), simUser(i));
  DIRECTORY.set(simUserId15(i), simUser(i));
}

/** The user id the entry's line carries, read here independently of the daemon's own reader. */
function userIdOf(entry: AcceptedEntry): string | undefined {
  // An ApexLog's line is its body; its record travels as metadata.
  if (entry.metadata.LogUserId !== undefined) return entry.metadata.LogUserId;
  if (!entry.line.startsWith("{")) return undefined;
  const payload = JSON.parse(entry.line) as Record<string, unknown>;
  for (const field of ["UserId", "USER_ID", "LogUserId"]) {
    if (typeof payload[field] === "string" && payload[field] !== "") return payload[field];
  }
  return undefined;
}

async function world(): Promise<DemoWorld> {
  return startDemoWorld({
    eventsPerTopic: 300,
    polling: {
      objects: { ApiAnomalyEventStore: { records: 40 } },
      dailyEventLogFiles: { types: { Report: 400 }, days: 1 },
      apexLogs: 6,
    },
  });
}

function delivered(w: DemoWorld): boolean {
  const polled = Object.values(w.pollingStats());
  return (
    polled.length > 0 &&
    polled.every((s) => s.emitted > 0 && s.delivered >= s.emitted) &&
    Object.values(w.stats()).every((s) => s.emitted > 0 && s.delivered >= s.emitted)
  );
}

function userQueries(w: DemoWorld): string[] {
  return w.org.rest.stats.queries.filter((q) => / FROM User\b/.test(q));
}

/** Every entry with a user id, by the source kind its `source` label names. */
function withUser(w: DemoWorld): { entry: AcceptedEntry; id: string }[] {
  return w.loki.entries().flatMap((entry) => {
    const id = userIdOf(entry);
    return id === undefined ? [] : [{ entry, id }];
  });
}

async function run(
  w: DemoWorld,
  enrich: Record<string, unknown>,
  logger = createLogger({ level: "silent" }),
): Promise<void> {
  const config = { ...w.config(join(tempDir(), "state.json")), enrich: { users: enrich } };
  const app = createApp(validateConfig(config), { logger });
  await runAppUntil(app, () => delivered(w));
  assert.ok(delivered(w), `not delivered: ${JSON.stringify({ ...w.stats(), ...w.pollingStats() })}`);
}

test("every entry with a user id reaches Loki with that user's fields, from one User query", async (t) => {
  const w = await world();
  t.after(() => w.stop());
  await run(w, { enabled: true });
  const entries = withUser(w);
  const kinds = new Set(entries.map(({ entry }) => entry.labels.source ?? entry.labels.event_type));
  assert.ok(entries.length >= 900 + 40 + 400 + 6, `${entries.length} entries with a user id`);
  for (const field of ["UserId", "USER_ID", "LogUserId"]) {
    assert.ok(
      entries.some(({ entry }) => entry.line.includes(`"${field}": `) || field in entry.metadata),
      `no entry carried ${field} (${[...kinds].join(" ")})`,
    );
  }
  for (const { entry, id } of entries) {
    const user = DIRECTORY.get(id);
    assert.ok(user, `${id} is no sim user`);
    const profile = (user.Profile as { Name: string }).Name;
    const role = (user.UserRole as { Name: string } | null)?.Name;
    assert.equal(entry.metadata.Username, user.Username, entry.line.slice(0, 200));
    assert.equal(entry.metadata.UserFullName, user.Name);
    assert.equal(entry.metadata.UserProfile, profile);
    assert.equal(entry.metadata.UserRole, role, "no role: no field");
    assert.equal(entry.metadata.UserIsActive, String(user.IsActive));
  }
  // All 97 users fit in the warm-up's one query: nothing was asked per id.
  assert.deepEqual(
    userQueries(w).map((q) => q.replace(/SELECT .* FROM/, "SELECT … FROM")),
    ["SELECT … FROM User ORDER BY LastLoginDate DESC LIMIT 10000"],
  );
});

test("users the warm-up did not hold are asked in batches, at most max_queries_per_hour", async (t) => {
  const w = await world();
  t.after(() => w.stop());
  // 5 users warm: the EventLogFile rows name all 97, so the rest are misses, looked up by id.
  await run(w, { enabled: true, max_users: 5, max_queries_per_hour: 3, batch_size: 5 });
  const queries = userQueries(w);
  assert.equal(queries.length, 3, `User queries:\n${queries.join("\n")}`);
  // The run ends long before the hour; which entries carry fields depends on when each user was
  // first met, but none carries a wrong user and none is missing.
  for (const { entry, id } of withUser(w)) {
    if (entry.metadata.Username !== undefined)
      assert.equal(entry.metadata.Username, DIRECTORY.get(id)!.Username);
  }
});

test("a failing User query loses nothing and holds nothing back: entries go on without the fields", async (t) => {
  const w = await world();
  t.after(() => w.stop());
  w.org.rest.faults.add({
    route: "query",
    kind: "server_error",
    times: 1_000_000,
    match: (path) => /FROM\+User|FROM%20User/.test(path),
  });
  const lines: string[] = [];
  const logger = createLogger({ level: "warn", destination: { write: (l: string) => lines.push(l) } });
  const started = Date.now();
  await run(w, { enabled: true, warmup_wait: "30s" }, logger);
  const tookMs = Date.now() - started;
  assert.ok(w.org.rest.faults.fired.server_error >= 1, "the User object was asked, and failed");
  const entries = withUser(w);
  assert.ok(entries.length >= 1346);
  assert.ok(
    entries.every(({ entry }) => entry.metadata.Username === undefined || entry.line.includes('"Username"')),
    "no entry carries enrichment it could not have",
  );
  assert.ok(entries.every(({ entry }) => entry.metadata.UserProfile === undefined));
  const warns = lines.filter((l) => l.includes("the User lookup of enrich.users failed"));
  assert.equal(warns.length, 1, `one WARN a minute:\n${warns.join("")}`);
  // warmup_wait is 30 s: a source that held its first entry for it after the warm-up failed would show here.
  assert.ok(tookMs < 25_000, `delivery took ${tookMs} ms`);
});

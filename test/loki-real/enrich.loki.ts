// enrich.users into the real Loki (#38): every source of the simulated org, whose User object names
// every user its data carries. LogQL's `| Username="…"` over structured metadata counts exactly the
// entries whose line (or ApexLog record) names that user, and no entry with a user id lacks the field.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { SIM_USERS, simUser, simUserId, simUserId15 } from "../../src/sim/salesforce-rest/users.ts";
import { tempDir } from "../support/tmp.ts";
import { runDaemon } from "../support/two-orgs.ts";
import { nowNs, realLokiForFile, type StoredEntry } from "./support/real-loki.ts";
import { emittedBySource } from "./support/sim-counts.ts";

const shared = realLokiForFile();
const EVENTS = 300;
const DAY_NS = 86_400_000_000_000n;

const USERNAME_OF = new Map<string, string>();
for (let i = 0; i < SIM_USERS; i++) {
  const username = simUser(i).Username as string;
  USERNAME_OF.set(simUserId(i), username);
  USERNAME_OF.set(simUserId15(i), username);
}

/** The user the stored entry is about, read off its line or its ApexLog record's metadata. */
function userOf(entry: StoredEntry): string | undefined {
  if (entry.metadata.LogUserId !== undefined) return entry.metadata.LogUserId;
  if (!entry.line.startsWith("{")) return undefined;
  const payload = JSON.parse(entry.line) as Record<string, unknown>;
  for (const field of ["UserId", "USER_ID"]) if (typeof payload[field] === "string") return payload[field];
  return undefined;
}

test(
  "with enrich.users every entry's user filters by | Username in LogQL, counted exactly",
  { skip: shared.missing },
  async (t) => {
    const loki = shared.loki;
    const tenant = "enrich-users";
    const world = await startDemoWorld({
      eventsPerTopic: EVENTS,
      polling: {
        objects: { ApiAnomalyEventStore: { records: 60 } },
        eventLogFiles: { Report: { rows: 500 } },
        apexLogs: 8,
      },
    });
    t.after(() => world.stop());
    const tree = world.config(join(tempDir(), "state.json")) as { sink: { loki: Record<string, unknown> } };
    tree.sink.loki = { ...tree.sink.loki, url: loki.pushUrl, tenant_id: tenant };
    const enriched = { ...tree, enrich: { users: { enabled: true } } };
    const want = Object.values(emittedBySource(world, EVENTS)).reduce((a, b) => a + b, 0);
    const reader = loki.reader(tenant);
    const range = [nowNs() - 7n * DAY_NS, nowNs() + 60_000_000_000n] as const;
    let seen = 0;
    await runDaemon(enriched, {
      pollOnce: true,
      what: `${want} entries in Loki`,
      until: async () => (seen = await reader.count('{job="sf2loki"}', ...range)) >= want,
    }).catch(async (err: unknown) => {
      const by = await reader.countBy('{job="sf2loki"}', ...range, ["source", "event_type"]);
      throw new Error(`${String(err)}; Loki holds ${seen}: ${JSON.stringify([...by])}`);
    });
    await loki.flush();
    assert.equal(await reader.count('{job="sf2loki"}', ...range), want, "count_over_time: every entry once");

    // The reference: who each stored entry is about, from its own content.
    const perUser = new Map<string, number>();
    let withUser = 0;
    for (const entry of await reader.entries('{job="sf2loki"}', ...range)) {
      const id = userOf(entry);
      if (id === undefined) continue;
      const username = USERNAME_OF.get(id);
      assert.ok(username, `${id} is no sim user`);
      withUser++;
      perUser.set(username, (perUser.get(username) ?? 0) + 1);
    }
    assert.ok(withUser >= 3 * EVENTS + 60 + 500 + 8, `${withUser} entries name a user`);
    assert.ok(perUser.size > 50, `${perUser.size} users`);

    const got = new Map<string, number>();
    for (const username of perUser.keys()) {
      got.set(username, await reader.count(`{job="sf2loki"} | Username="${username}"`, ...range));
    }
    assert.deepEqual(got, perUser, 'count_over_time({job="sf2loki"} | Username="…") per user');
    const without = await reader.count('{job="sf2loki"} | Username=""', ...range);
    assert.equal(without, want - withUser, "only entries without a user id lack Username");
    const admins = await reader.count('{job="sf2loki"} | UserProfile="System Administrator"', ...range);
    assert.equal(admins, perUser.get(simUser(0).Username as string), "user 0 is the one admin");
    t.diagnostic(
      `${want} entries, ${withUser} with a user id over ${perUser.size} users; ${without} without; User queries: ${
        world.org.rest.stats.queries.filter((q) => / FROM User\b/.test(q)).length
      }`,
    );
  },
);

// The enrich.users cache and its fill loop on a manual clock: what is answered from memory, when a
// query goes, how many go in an hour, and what a failing query costs (nothing but the fields).
import assert from "node:assert/strict";
import { test } from "node:test";
import type { EnrichUsersConfig } from "../../src/config/schema-enrich.ts";
import { UserDirectory, USER_METADATA } from "../../src/enrich/users/directory.ts";
import { createLogger } from "../../src/obs/logger.ts";
import type { SalesforceUser } from "../../src/salesforce/user-query.ts";
import { ManualClock } from "../../src/util/clock.ts";

const SETTINGS: EnrichUsersConfig = {
  enabled: true,
  max_users: 100,
  ttl: 3_600_000,
  max_queries_per_hour: 3,
  batch_size: 4,
  batch_wait: 2_000,
  warmup_wait: 5_000,
};

const id = (i: number): string => `005SIM0000${String(i).padStart(5, "0")}AAA`;
const user = (userId: string): SalesforceUser => ({
  id: userId,
  username: `${userId}@example.com`,
  name: "Some One",
  profile: "Standard User",
  role: null,
  isActive: true,
});

/**
 * A User object that knows every id but `unknown`, and fails while `failing` is set; its most
 * recently active users are `recent` (none by default), and the warm-up query hangs while `hang`.
 */
function fakeOrg(unknown: ReadonlySet<string> = new Set(), recent: string[] = []) {
  const calls: string[][] = [];
  const org = {
    calls,
    recentCalls: 0,
    failing: false,
    hang: false,
    lookup: {
      byIds: (ids: readonly string[]): Promise<SalesforceUser[]> => {
        calls.push([...ids]);
        if (org.failing) return Promise.reject(new Error("INSUFFICIENT_ACCESS on User"));
        return Promise.resolve(ids.filter((i) => !unknown.has(i)).map(user));
      },
      recent: (limit: number, signal: AbortSignal) => {
        org.recentCalls++;
        if (org.hang) {
          return new Promise<never>((_, reject) => {
            signal.addEventListener(
              "abort",
              () => {
                reject(new Error("aborted"));
              },
              { once: true },
            );
          });
        }
        if (org.failing) return Promise.reject(new Error("INSUFFICIENT_ACCESS on User"));
        return Promise.resolve({ users: recent.slice(0, limit).map(user), requests: 1 });
      },
    },
  };
  return org;
}

/** Lets the loop's promise chain run after a clock move. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await new Promise((r) => setImmediate(r));
};

/** Moves the clock `ms` in steps, letting the loop register its next sleep after each. */
async function pass(clock: ManualClock, ms: number, step = 1_000): Promise<void> {
  await settle();
  for (let done = 0; done < ms; done += step) {
    clock.advance(Math.min(step, ms - done));
    await settle();
  }
}

function setup(
  settings: Partial<EnrichUsersConfig> = {},
  unknown?: ReadonlySet<string>,
  init: { recent?: string[]; hang?: boolean; failing?: boolean } = {},
) {
  const clock = new ManualClock({ auto: false });
  const lines: string[] = [];
  const org = fakeOrg(unknown, init.recent);
  org.hang = init.hang ?? false;
  org.failing = init.failing ?? false;
  const dir = new UserDirectory({
    settings: { ...SETTINGS, ...settings },
    lookup: org.lookup,
    clock,
    logger: createLogger({ level: "info", destination: { write: (l: string) => lines.push(l) } }),
  });
  const release = dir.open();
  return { clock, lines, org, dir, release };
}

test("the warm-up reads the most recently active users before the first entry leaves", async (t) => {
  const recent = [id(1), id(2), id(3)];
  const { dir, org, release } = setup({}, undefined, { recent });
  t.after(release);
  await dir.ready(AbortSignal.timeout(10_000));
  assert.equal(org.recentCalls, 1);
  for (const r of recent) assert.equal(dir.fieldsOf(r)?.[USER_METADATA.username], `${r}@example.com`);
  assert.equal(dir.counts.miss, 0);
  assert.equal(dir.counts.queriesOk, 1, "the warm-up counts in the hour's queries");
});

test("a source waits for a hanging warm-up at most warmup_wait; a failed one not at all", async (t) => {
  const hanging = setup({}, undefined, { hang: true });
  t.after(hanging.release);
  let ready = false;
  void hanging.dir.ready(AbortSignal.timeout(10_000)).then(() => (ready = true));
  await pass(hanging.clock, 4_000);
  assert.equal(ready, false);
  await pass(hanging.clock, 1_000);
  assert.equal(ready, true, "released at warmup_wait");

  const failing = setup({}, undefined, { failing: true });
  t.after(failing.release);
  let done = false;
  void failing.dir.ready(AbortSignal.timeout(10_000)).then(() => (done = true));
  await settle();
  assert.equal(done, true, "a failed warm-up releases at once");
  assert.equal(failing.lines.filter((l) => l.includes("User lookup of enrich.users failed")).length, 1);
});

test("a miss answers nothing at once, queues the id, and the next entries get the user", async (t) => {
  const { clock, org, dir, release } = setup();
  t.after(release);
  assert.equal(dir.fieldsOf(id(1)), undefined);
  assert.equal(dir.fieldsOf(id(2)), undefined);
  await settle();
  assert.equal(org.calls.length, 0, "the first id waits batch_wait for company");
  await pass(clock, 2_000);
  assert.deepEqual(org.calls, [[id(1), id(2)]]);
  assert.deepEqual(dir.fieldsOf(id(1)), {
    [USER_METADATA.username]: `${id(1)}@example.com`,
    [USER_METADATA.name]: "Some One",
    [USER_METADATA.profile]: "Standard User",
    [USER_METADATA.isActive]: "true",
  });
  assert.equal(dir.counts.miss, 2);
  assert.equal(dir.counts.hit, 1);
});

test("a full batch goes at once; the queries of an hour stay within max_queries_per_hour", async (t) => {
  const { clock, org, dir, release } = setup();
  t.after(release);
  for (let i = 0; i < 20; i++) dir.fieldsOf(id(i));
  await settle();
  assert.equal(org.calls.length, 2, "the warm-up and two full batches at once spend the hour's 3");
  assert.ok(org.calls.every((c) => c.length === 4));
  clock.advance(3_599_000);
  await settle();
  assert.equal(org.calls.length, 2, "nothing more inside the hour");
  clock.advance(1_000);
  await settle();
  assert.equal(org.calls.length, 5, "the hour's queries left the window: the last 12 ids go");
  assert.equal(new Set(org.calls.flat()).size, 20, "every id asked once");
  for (let i = 0; i < 20; i++) assert.ok(dir.fieldsOf(id(i)), `user ${i} known`);
});

test("an id Salesforce does not know is remembered as such, not asked again within the ttl", async (t) => {
  const { clock, org, dir, release } = setup({}, new Set([id(9)]));
  t.after(release);
  dir.fieldsOf(id(9));
  await pass(clock, 2_000);
  assert.equal(dir.fieldsOf(id(9)), undefined);
  await pass(clock, 60_000);
  assert.equal(org.calls.length, 1);
  assert.equal(dir.counts.unknown, 1);
});

test("past the ttl the cached user is still attached while a refresh is asked behind it", async (t) => {
  const { clock, org, dir, release } = setup({ ttl: 60_000 });
  t.after(release);
  dir.fieldsOf(id(1));
  await pass(clock, 2_000);
  await pass(clock, 61_000);
  assert.ok(dir.fieldsOf(id(1)), "stale, still attached");
  assert.equal(dir.counts.stale, 1);
  await pass(clock, 2_000);
  assert.equal(org.calls.length, 2, "refreshed");
  assert.ok(dir.fieldsOf(id(1)));
  assert.equal(dir.counts.hit, 1);
});

test("memory is bounded by max_users: the user looked up longest ago goes first", async (t) => {
  const { clock, dir, release } = setup({ max_users: 5, batch_size: 5, max_queries_per_hour: 100 });
  t.after(release);
  for (let i = 0; i < 5; i++) dir.fieldsOf(id(i));
  await settle();
  for (let i = 5; i < 8; i++) dir.fieldsOf(id(i));
  await pass(clock, 2_000);
  assert.equal(dir.size, 5);
  assert.equal(dir.fieldsOf(id(0)), undefined, "evicted, queued again");
  assert.ok(dir.fieldsOf(id(7)));
  // And the queue of unknown ids is bounded too.
  const { dir: full, release: r2 } = setup({ max_users: 3, batch_size: 300, max_queries_per_hour: 1 });
  t.after(r2);
  for (let i = 0; i < 10; i++) full.fieldsOf(id(i));
  assert.equal(full.counts.dropped, 7);
});

test("a failing User query degrades with one WARN a minute, retries, and loses no id", async (t) => {
  const { clock, lines, org, dir, release } = setup({ max_queries_per_hour: 1000 });
  t.after(release);
  org.failing = true;
  dir.fieldsOf(id(1));
  dir.fieldsOf(id(2));
  await pass(clock, 90_000);
  assert.ok(org.calls.length >= 5, `retried: ${org.calls.length} calls`);
  const warns = lines.filter((l) => l.includes("the User lookup of enrich.users failed"));
  assert.equal(warns.length, 2, `one WARN a minute over 90 s:\n${warns.join("")}`);
  assert.match(warns[0]!, /INSUFFICIENT_ACCESS on User/);
  assert.match(warns[0]!, /nothing is held back/);
  assert.equal(dir.fieldsOf(id(1)), undefined, "meanwhile entries go without the fields");
  org.failing = false;
  await pass(clock, 70_000);
  assert.ok(dir.fieldsOf(id(1)) && dir.fieldsOf(id(2)), "both ids answered once it recovered");
  assert.ok(lines.some((l) => l.includes("answers again")));
  assert.ok(dir.counts.queriesFailed >= 5);
});

test("the loop ends with the last source that opened it", async () => {
  const { dir, release } = setup();
  const second = dir.open();
  release();
  second();
  await dir.closed();
});

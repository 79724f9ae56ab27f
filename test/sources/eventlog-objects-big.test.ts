import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { simId } from "../../src/sim/salesforce-rest/index.ts";
import { counts, drive } from "./shaping-harness.ts";
import { MIN, NOW, idsOf, object, objectsWorld, rec } from "./eventlog-objects-world.ts";

const range = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => simId("0Yq", from + i));
const big = (extra = {}) => object("LoginEvent", { big_object: true, ...extra });

describe("EventLogObjectsSource: Big Objects", () => {
  it("drains newest-first and delivers oldest-first, exactly once, with descending queries only", async (t) => {
    const records = Array.from({ length: 450 }, (_, i) => rec(i, NOW - 55 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records }, bigObjects: ["LoginEvent"] });
    const { entries } = await drive(w.source([big()]), w.store);
    assert.deepEqual(idsOf(entries), range(0, 450));
    assert.ok(w.sim.stats.queries.every((q) => q.includes("ORDER BY EventDate DESC LIMIT 200")));
    assert.equal((await drive(w.source([big()]), w.store)).entries.length, 0);
  });

  it("keeps at most max_catchup_records per cycle, the oldest, and catches up over cycles (#46)", async (t) => {
    const records = Array.from({ length: 450 }, (_, i) => rec(i, NOW - 55 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records }, bigObjects: ["LoginEvent"] });
    const obj = big({ max_catchup_records: 100 });
    const first = await drive(w.source([obj]), w.store);
    assert.deepEqual(idsOf(first.entries), range(0, 100));
    const all = [...idsOf(first.entries)];
    for (let cycle = 0; cycle < 6; cycle++)
      all.push(...idsOf((await drive(w.source([obj]), w.store)).entries));
    assert.deepEqual(all, range(0, 450));
  });

  it("drains a 600-record tie completely with short queries, and never re-emits it (#95, #127)", async (t) => {
    const tie = NOW - 30 * MIN;
    const records = [
      ...Array.from({ length: 30 }, (_, i) => rec(i, tie - 60_000 + i)),
      ...Array.from({ length: 600 }, (_, i) => rec(30 + i, tie)),
      ...Array.from({ length: 30 }, (_, i) => rec(630 + i, tie + 60_000 + i)),
    ];
    const w = await objectsWorld(t, { objects: { LoginEvent: records }, bigObjects: ["LoginEvent"] });
    const first = await drive(w.source([big()]), w.store);
    assert.deepEqual(new Set(idsOf(first.entries)), new Set(range(0, 660)));
    assert.equal(first.entries.length, 660);
    const longest = Math.max(...w.sim.stats.queries.map((q) => encodeURIComponent(q).length));
    assert.ok(longest < 1_000, `longest query ${longest} characters`);

    // With nothing newer than the tie, the watermark is the tie itself: every later cycle fetches
    // all 600 again (>=) and must drop every one of them, more than the 500-Id window holds.
    const w2 = await objectsWorld(t, {
      objects: { LoginEvent: records.slice(0, 630) },
      bigObjects: ["LoginEvent"],
    });
    const firstTie = await drive(w2.source([big()]), w2.store);
    assert.equal(firstTie.entries.length, 630);
    const stored = JSON.parse(w2.store.map.get("eventlog_objects:LoginEvent")!) as {
      boundary_ids: string[];
      ids: string[];
    };
    assert.equal(stored.boundary_ids.length, 600);
    assert.equal(stored.ids.length, 500);
    for (let cycle = 0; cycle < 2; cycle++) {
      const again = await drive(w2.source([big()]), w2.store);
      assert.equal(again.entries.length, 0, "a tie larger than the 500-Id window is not re-emitted");
    }
  });

  it("waits out the default 5 min settle window for rows written late (#87)", async (t) => {
    const records = [
      rec(1, NOW - 10 * MIN),
      rec(2, NOW - 4 * MIN, { $visibleAtMs: NOW + 2 * MIN }),
      rec(3, NOW - 3 * MIN),
    ];
    const w = await objectsWorld(t, { objects: { LoginEvent: records }, bigObjects: ["LoginEvent"] });
    assert.deepEqual(idsOf((await drive(w.source([big()]), w.store)).entries), [simId("0Yq", 1)]);
    w.clock.advance(5 * MIN);
    assert.deepEqual(idsOf((await drive(w.source([big()]), w.store)).entries), [
      simId("0Yq", 2),
      simId("0Yq", 3),
    ]);
  });

  it("throws away a drain that failed midway and retries it whole next cycle", async (t) => {
    const records = Array.from({ length: 450 }, (_, i) => rec(i, NOW - 55 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records }, bigObjects: ["LoginEvent"] });
    w.sim.faults.add({ route: "query", kind: "server_error", times: 3, match: (p) => p.includes("%3C%3D") });
    const first = await drive(w.source([big()]), w.store);
    assert.equal(first.entries.length, 0);
    const second = await drive(w.source([big()]), w.store);
    const seen = counts(idsOf(second.entries));
    assert.equal(seen.size, 450);
  });
});

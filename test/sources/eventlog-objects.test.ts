import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { simId } from "../../src/sim/salesforce-rest/index.ts";
import { counts, drive } from "./shaping-harness.ts";
import { MIN, NOW, idsOf, object, objectsWorld, rec } from "./eventlog-objects-world.ts";

const range = (from: number, to: number): string[] =>
  Array.from({ length: to - from }, (_, i) => simId("0Yq", from + i));

describe("EventLogObjectsSource: ascending objects", () => {
  it("delivers every record exactly once across pages, each entry carrying its own cursor", async (t) => {
    const records = Array.from({ length: 450 }, (_, i) => rec(i, NOW - 50 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const { entries } = await drive(w.source([object("LoginEvent")]), w.store, { commitEvery: 9 });

    assert.deepEqual(idsOf(entries), range(0, 450));
    const first = JSON.parse(entries[0]!.checkpoint.value) as { ids: string[]; last_ts: string };
    assert.deepEqual(first, { ids: [simId("0Yq", 0)], last_ts: "2026-01-01T11:10:00.000+0000" });
    const stored = w.store.map.get("eventlog_objects:LoginEvent")!;
    assert.ok(stored.startsWith('{"ids": ["0YqSIM'), "Python's key order and spacing");
    // Only Ids at the watermark are kept: no query can return an older one.
    assert.deepEqual((JSON.parse(stored) as { ids: string[] }).ids, [simId("0Yq", 449)]);
    const e = entries[10]!;
    assert.deepEqual(e.labels, { source: "eventlog_objects", event_type: "LoginEvent" });
    assert.deepEqual(e.structuredMetadata, { Username: "user3@example.com", level: "warn" });
    assert.ok(e.line.startsWith('{"EventDate": '));
    assert.match(e.line, /"attributes": \{"type": "LoginEvent"/);
  });

  it("restarts from the committed cursor: nothing repeats, new records flow", async (t) => {
    const records = Array.from({ length: 30 }, (_, i) => rec(i, NOW - 30 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 30);
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 0);
    records.push(rec(30, NOW - MIN), rec(31, NOW - MIN));
    assert.deepEqual(idsOf((await drive(w.source([object("LoginEvent")]), w.store)).entries), range(30, 32));
  });

  it("after a kill mid-cycle replays only what was not committed", async (t) => {
    const records = Array.from({ length: 400 }, (_, i) => rec(i, NOW - 50 * MIN + i * 1000));
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const killed = await drive(w.source([object("LoginEvent")]), w.store, {
      commitEvery: 10,
      killAfter: 237,
    });
    const resumed = await drive(w.source([object("LoginEvent")]), w.store, { commitEvery: 10 });
    const seen = counts([...idsOf(killed.entries), ...idsOf(resumed.entries)]);
    assert.deepEqual(new Set(seen.keys()), new Set(range(0, 400)));
    assert.deepEqual(
      [...seen].filter(([, n]) => n > 1).map(([id]) => id),
      range(230, 237),
    );
  });

  it("never stalls or drops when 500 records share one timestamp (#38)", async (t) => {
    const tie = NOW - 20 * MIN;
    const records = [
      ...Array.from({ length: 10 }, (_, i) => rec(i, tie - 1000)),
      ...Array.from({ length: 500 }, (_, i) => rec(10 + i, tie)),
      ...Array.from({ length: 20 }, (_, i) => rec(510 + i, tie + 1000)),
    ];
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const first = await drive(w.source([object("LoginEvent")]), w.store);
    assert.deepEqual(idsOf(first.entries), range(0, 530));
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 0);
  });

  it("keeps a tie straddling a restart exactly once", async (t) => {
    const tie = NOW - 20 * MIN;
    const records = Array.from({ length: 300 }, (_, i) => rec(i, tie));
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const killed = await drive(w.source([object("LoginEvent")]), w.store, {
      commitEvery: 50,
      killAfter: 120,
    });
    const resumed = await drive(w.source([object("LoginEvent")]), w.store);
    assert.deepEqual([...idsOf(killed.entries).slice(0, 100), ...idsOf(resumed.entries)], range(0, 300));
  });

  it("holds the cursor behind the settle window so late-visible rows are not lost (#87)", async (t) => {
    const late = rec(2, NOW - 8 * MIN, { $visibleAtMs: NOW + MIN });
    const records = [rec(1, NOW - 10 * MIN), late, rec(3, NOW - MIN)];
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const obj = object("LoginEvent", { settle_window: 5 * MIN });
    assert.deepEqual(idsOf((await drive(w.source([obj]), w.store)).entries), [simId("0Yq", 1)]);
    w.clock.advance(6 * MIN);
    assert.deepEqual(idsOf((await drive(w.source([obj]), w.store)).entries), [
      simId("0Yq", 2),
      simId("0Yq", 3),
    ]);
  });

  it("moves the cursor with a checkpoint-only entry when every record was filtered (#64)", async (t) => {
    const w = await objectsWorld(t, {
      objects: { LoginEvent: [rec(1, NOW - 9 * MIN), rec(2, NOW - 8 * MIN)] },
    });
    const settings = { transforms: [{ action: "drop_row" as const, match: { LoginType: "Application" } }] };
    const first = await drive(w.source([object("LoginEvent")], settings), w.store);
    assert.equal(first.entries.length, 0);
    assert.equal(first.checkpointOnly.length, 1);
    assert.deepEqual(JSON.parse(w.store.map.get("eventlog_objects:LoginEvent")!), {
      ids: [simId("0Yq", 2)],
      last_ts: "2026-01-01T11:52:00.000+0000",
    });
  });

  it("samples on the record Id, before transforms", async (t) => {
    const records = Array.from({ length: 100 }, (_, i) => rec(i, NOW - 30 * MIN + i));
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    const settings = { transforms: [{ action: "hash" as const, fields: ["Id"] }] };
    const { entries } = await drive(w.source([object("LoginEvent", { sample: 0.5 })], settings), w.store);
    assert.ok(entries.length > 20 && entries.length < 80);
    assert.match(idsOf(entries)[0]!, /^[0-9a-f]{16}$/);
  });
});

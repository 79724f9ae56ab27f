import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { simId } from "../../src/sim/salesforce-rest/index.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { drive } from "./shaping-harness.ts";
import { MIN, NOW, idsOf, object, objectsWorld, rec } from "./eventlog-objects-world.ts";

describe("EventLogObjectsSource: faults and scheduling", () => {
  it("a throttle ends the pass: objects still due wait a full interval", async (t) => {
    const w = await objectsWorld(t, {
      objects: { LoginEvent: [rec(1, NOW - 9 * MIN)], ApiEvent: [rec(2, NOW - 9 * MIN)] },
    });
    w.sim.faults.add({ route: "query", kind: "throttle", times: 1, match: (p) => p.includes("LoginEvent") });
    const objs = [object("LoginEvent"), object("ApiEvent")];
    const first = await drive(w.source(objs), w.store);
    assert.equal(first.entries.length, 0);
    assert.equal(w.sim.stats.requests, 1, "ApiEvent was not polled after the throttle");
    assert.equal((await drive(w.source(objs), w.store)).entries.length, 2);
  });

  it("contains a 2xx answer that is not JSON (#94) and a MALFORMED_QUERY", async (t) => {
    const w = await objectsWorld(t, { objects: { LoginEvent: [rec(1, NOW - 9 * MIN)] } });
    w.sim.faults.add({ route: "query", kind: "html", times: 1 });
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 0);
    const bad = await drive(w.source([object("NoSuchObject")]), w.store);
    assert.equal(bad.entries.length, 0);
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 1);
  });

  it("contains BIG_OBJECT_UNSUPPORTED_OPERATION when big_object is not set", async (t) => {
    const w = await objectsWorld(t, {
      objects: { LoginEvent: [rec(1, NOW - 9 * MIN)] },
      bigObjects: ["LoginEvent"],
    });
    assert.equal((await drive(w.source([object("LoginEvent")]), w.store)).entries.length, 0);
  });

  it("falls back to the lookback window on a stored watermark that does not parse (#103, §5.5)", async (t) => {
    const w = await objectsWorld(t, {
      objects: { LoginEvent: [rec(1, NOW - 3 * 60 * MIN), rec(2, NOW - 9 * MIN)] },
    });
    for (const junk of ['{"ids": [], "last_ts": "None"}', "junk", '{"ids": 5, "last_ts": null}']) {
      w.store.map.set("eventlog_objects:LoginEvent", junk);
      const { entries } = await drive(w.source([object("LoginEvent")]), w.store);
      assert.deepEqual(idsOf(entries), [simId("0Yq", 2)], junk);
    }
  });

  it("continues from a Python-written checkpoint, bare timestamps included", async (t) => {
    const records = [rec(1, NOW - 9 * MIN), rec(2, NOW - 9 * MIN), rec(3, NOW - 8 * MIN)];
    const w = await objectsWorld(t, { objects: { LoginEvent: records } });
    w.store.map.set(
      "eventlog_objects:LoginEvent",
      `{"ids": ["${simId("0Yq", 1)}"], "last_ts": "2026-01-01T11:51:00.000+0000"}`,
    );
    assert.deepEqual(idsOf((await drive(w.source([object("LoginEvent")]), w.store)).entries), [
      simId("0Yq", 2),
      simId("0Yq", 3),
    ]);
    w.store.map.set("eventlog_objects:LoginEvent", "2026-01-01T11:52:00.000+0000");
    assert.deepEqual(idsOf((await drive(w.source([object("LoginEvent")]), w.store)).entries), [
      simId("0Yq", 3),
    ]);
  });

  it("drops a stored Id that is not a Salesforce Id instead of putting it in SOQL (#150)", async (t) => {
    const w = await objectsWorld(t, {
      objects: { LoginEvent: [rec(1, NOW - 9 * MIN), rec(2, NOW - 8 * MIN)] },
    });
    w.store.map.set(
      "eventlog_objects:LoginEvent",
      `{"ids": ["x' OR Name != '"], "last_ts": "2026-01-01T11:51:00.000+0000"}`,
    );
    const { entries } = await drive(w.source([object("LoginEvent")]), w.store);
    assert.equal(entries.length, 2);
    assert.ok(w.sim.stats.queries.every((q) => !q.includes("OR Name")));
    assert.ok(w.sim.stats.queries[0]!.includes("EventDate >= 2026-01-01T11:51:00.000Z"));
  });

  it("polls each object on its own interval", async (t) => {
    const stop = new AbortController();
    const clock = new (class extends ManualClock {
      override sleep(ms: number, signal?: AbortSignal): Promise<void> {
        if (this.now() + ms > NOW + 60 * MIN) stop.abort();
        return super.sleep(ms, signal);
      }
    })({ startMs: NOW });
    const w = await objectsWorld(t, { objects: { LoginEvent: [], ApiEvent: [] } }, clock);
    const source = w.source(
      [object("LoginEvent", { poll_interval: MIN }), object("ApiEvent", { poll_interval: 10 * MIN })],
      {},
      { once: false },
    );
    await drive(source, w.store, { signal: stop.signal });
    const polls = (name: string) => w.sim.stats.queries.filter((q) => q.includes(`FROM ${name}`)).length;
    assert.ok(
      polls("LoginEvent") >= 50 && polls("LoginEvent") <= 70,
      `LoginEvent polled ${polls("LoginEvent")} times`,
    );
    assert.ok(polls("ApiEvent") >= 5 && polls("ApiEvent") <= 7, `ApiEvent polled ${polls("ApiEvent")} times`);
  });
});

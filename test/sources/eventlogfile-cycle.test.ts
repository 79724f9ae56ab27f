import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { elfFile, sfDatetime } from "../../src/sim/salesforce-rest/index.ts";
import { shouldKeep } from "../../src/sources/shaping/sample.ts";
import { drive } from "./shaping-harness.ts";
import { HOUR, T0, elfType, elfWorld, ids, requestId } from "./eventlogfile-world.ts";

describe("EventLogFileSource: cycle rules", () => {
  it("leaves an Hourly file younger than the settle window for a later cycle", async (t) => {
    const w = await elfWorld(t);
    const now = w.clock.now();
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: now - 20 * 60_000, rows: 2 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: now - 2 * 60_000, rows: 3 });
    elfFile(w.sim.data, { n: 3, eventType: "API", createdMs: now - 60_000, rows: 4 });
    const source = w.source();
    assert.deepEqual(
      (await drive(source, w.store)).entries.map((e) => requestId(e.line)),
      ids(0, 2),
    );
    w.clock.advance(10 * 60_000);
    assert.deepEqual(
      (await drive(source, w.store)).entries.map((e) => requestId(e.line)),
      ids(2, 9),
    );
  });

  it("judges file age by the server's clock when the skew exceeds 30 s", async (t) => {
    const w = await elfWorld(t, { serverClockOffsetMs: 10 * 60_000 });
    const now = w.clock.now();
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: now - HOUR, rows: 1 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: now - 2 * 60_000, rows: 1 });
    const source = w.source();
    // First cycle: no download has told us the server's time yet, so the young file waits.
    assert.equal((await drive(source, w.store)).entries.length, 1);
    // Second cycle, same local time: by the server's clock the file is 12 minutes old.
    assert.equal((await drive(source, w.store)).entries.length, 1);
  });

  it("reprocesses a Daily file Salesforce regenerated in place with a newer CreatedDate", async (t) => {
    const w = await elfWorld(t);
    const file = elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 3, interval: "Daily" });
    const daily = { interval: "Daily" as const };
    assert.equal((await drive(w.source(daily), w.store)).entries.length, 3);
    assert.equal((await drive(w.source(daily), w.store)).entries.length, 0);
    file.CreatedDate = sfDatetime(T0 + 30 * 60_000);
    file.rows = 4;
    assert.equal((await drive(w.source(daily), w.store)).entries.length, 4);
  });

  it("discovers types per cycle, leaving out explicit, excluded and elsewhere-owned ones", async (t) => {
    const w = await elfWorld(t);
    for (const [n, type] of ["API", "URI", "Logout", "Login", "Report"].entries()) {
      elfFile(w.sim.data, { n: n + 1, eventType: type, createdMs: T0, rows: 1 });
    }
    const settings = {
      event_types: [elfType("*", { sample: 1 }), elfType("API", { labels: ["METHOD"] })],
      exclude: ["Logout"],
    };
    const source = w.source(settings, { ownedElsewhere: (type) => type === "Login" });
    const { entries } = await drive(source, w.store);
    assert.deepEqual(entries.map((e) => e.labels.event_type).sort(), ["API", "Report", "URI"]);
    const api = entries.find((e) => e.labels.event_type === "API")!;
    assert.deepEqual(Object.keys(api.labels), ["METHOD", "source", "event_type"]);
    assert.ok(w.sim.stats.queries[0]!.includes("GROUP BY EventType"));
  });

  it("skips the whole cycle when discovery is throttled (#126)", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 1 });
    w.sim.faults.add({ route: "query", kind: "throttle", times: 1 });
    const source = w.source({ event_types: [elfType("*"), elfType("API")] });
    assert.equal((await drive(source, w.store)).entries.length, 0);
    assert.equal(w.sim.stats.requests, 1, "no listing after a throttled discovery");
    assert.equal((await drive(source, w.store)).entries.length, 1);
  });

  it("moves the cursor with a checkpoint-only entry when every row was filtered", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 5 });
    const settings = { transforms: [{ action: "drop_row" as const, match: { EVENT_TYPE: "API" } }] };
    const first = await drive(w.source(settings), w.store);
    assert.equal(first.entries.length, 0);
    assert.equal(first.checkpointOnly.length, 1);
    assert.equal(first.checkpointOnly[0]!.line, "");
    const downloads = w.sim.stats.downloads;
    await drive(w.source(settings), w.store);
    assert.equal(w.sim.stats.downloads, downloads, "the filtered file is not fetched again");
  });

  it("samples deterministically on REQUEST_ID and still advances past the sampled-out rows", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 200 });
    const { entries } = await drive(w.source({ event_types: [elfType("API", { sample: 0.3 })] }), w.store);
    const kept = ids(0, 200).filter((id) => shouldKeep(id, 0.3));
    assert.deepEqual(
      entries.map((e) => requestId(e.line)),
      kept,
    );
    assert.ok(kept.length > 30 && kept.length < 90);
    assert.equal((JSON.parse(w.store.map.get("eventlogfile:API")!) as { ids: unknown[] }).ids.length, 1);
  });

  it("applies transforms before shaping and the type's own metadata list", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 2 });
    const settings = {
      event_types: [elfType("API", { structured_metadata_fields: ["METHOD"] })],
      transforms: [
        { action: "mask" as const, fields: ["CLIENT_IP"] },
        { action: "drop_field" as const, fields: ["SESSION_KEY"] },
      ],
    };
    const { entries } = await drive(w.source(settings), w.store);
    const row = JSON.parse(entries[0]!.line) as Record<string, string>;
    assert.match(row.CLIENT_IP!, /^10\.\d+\.\d+\.x$/);
    assert.equal(row.SESSION_KEY, undefined);
    assert.deepEqual(Object.keys(entries[0]!.structuredMetadata), ["METHOD", "level"]);
  });
});

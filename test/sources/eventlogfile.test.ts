import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { elfFile } from "../../src/sim/salesforce-rest/index.ts";
import { parseSfTimestampNs } from "../../src/salesforce/soql-datetime.ts";
import { canonicalJson } from "../../src/sources/shaping/json.ts";
import { eachEntry } from "../../src/sources/source.ts";
import { counts, drive } from "./shaping-harness.ts";
import { HOUR, T0, elfType, elfWorld, ids, requestId } from "./eventlogfile-world.ts";

function lastCreated(value: string | undefined): string | undefined {
  return value === undefined ? undefined : (JSON.parse(value) as { last_created: string }).last_created;
}

describe("EventLogFileSource: delivery", () => {
  it("delivers every row of every file exactly once, listing all pages of every type", async (t) => {
    const w = await elfWorld(t, { batchSize: 1 });
    const d = w.sim.data;
    elfFile(d, { n: 1, eventType: "API", createdMs: T0, rows: 120 });
    elfFile(d, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 75 });
    elfFile(d, { n: 3, eventType: "API", createdMs: T0 + HOUR, rows: 5 });
    elfFile(d, { n: 4, eventType: "Login", createdMs: T0, rows: 50 });
    elfFile(d, { n: 5, eventType: "Login", createdMs: T0 + 30 * 60_000, rows: 10 });
    const source = w.source({
      event_types: [elfType("API"), elfType("Login")],
      page_size: 2,
      concurrency: 2,
    });

    const { entries } = await drive(source, w.store, { commitEvery: 7 });

    const seen = counts(entries.map((e) => requestId(e.line)));
    assert.deepEqual(
      [...seen.values()].filter((n) => n !== 1),
      [],
    );
    assert.deepEqual(new Set(seen.keys()), new Set([...ids(0, 200), ...ids(0, 60, "Login")]));
    assert.equal(lastCreated(w.store.map.get("eventlogfile:API")), "2026-01-01T11:00:00.000+0000");
    assert.equal(lastCreated(w.store.map.get("eventlogfile:Login")), "2026-01-01T10:30:00.000+0000");
    // page_size 2 over three API files needs a second listing, strictly after the last listed file.
    assert.ok(w.sim.stats.queries.some((q) => q.includes("AND (CreatedDate > 2026-01-01T11:00:00.000Z OR")));
  });

  it("shapes each row: sorted-key JSON line, labels, event time, routed metadata and level", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 3 });
    const { entries } = await drive(w.source(), w.store);
    assert.equal(entries.length, 3);
    const e = entries[0]!;
    const row = JSON.parse(e.line) as Record<string, string>;
    assert.equal(e.line, canonicalJson(row));
    assert.ok(e.line.startsWith('{"API_TYPE": '));
    assert.deepEqual(e.labels, { source: "eventlogfile", event_type: "API" });
    assert.equal(e.timestampNs, parseSfTimestampNs(row.TIMESTAMP_DERIVED!));
    assert.deepEqual(e.structuredMetadata, {
      USER_ID: row.USER_ID,
      CLIENT_IP: row.CLIENT_IP,
      level: row.REQUEST_STATUS === "S" ? "info" : "warn",
    });
  });

  it("carries the pre-file cursor on every row but the file's last, and tokens per key never go back", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 4 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 3 });
    const { entries } = await drive(w.source(), w.store);
    const created = entries.map((e) => lastCreated(e.checkpoint.value));
    assert.deepEqual(created, [
      "2025-12-31T13:00:00Z",
      "2025-12-31T13:00:00Z",
      "2025-12-31T13:00:00Z",
      "2026-01-01T10:00:00.000+0000",
      "2026-01-01T10:00:00.000+0000",
      "2026-01-01T10:00:00.000+0000",
      "2026-01-01T11:00:00.000+0000",
    ]);
    assert.equal(
      w.store.map.get("eventlogfile:API"),
      '{"ids": [["0ATSIM000000000001", "2026-01-01T10:00:00.000+0000"], ["0ATSIM000000000002", "2026-01-01T11:00:00.000+0000"]], "last_created": "2026-01-01T11:00:00.000+0000"}',
    );
  });

  it("resumes after a restart from the committed checkpoint: nothing repeats, new files flow", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 30 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 20 });
    assert.equal((await drive(w.source(), w.store)).entries.length, 50);

    const again = await drive(w.source(), w.store);
    assert.equal(again.entries.length + again.checkpointOnly.length, 0);

    elfFile(w.sim.data, { n: 3, eventType: "API", createdMs: T0 + HOUR + 1000, rows: 12 });
    const third = await drive(w.source(), w.store);
    assert.deepEqual(
      third.entries.map((e) => requestId(e.line)),
      ids(50, 62),
    );
  });

  it("after a kill mid-file replays only the interrupted file (at-least-once, duplicates bounded)", async (t) => {
    const w = await elfWorld(t);
    for (let n = 1; n <= 3; n++)
      elfFile(w.sim.data, { n, eventType: "API", createdMs: T0 + n * 60_000, rows: 40 });

    const killed = await drive(w.source(), w.store, { commitEvery: 7, killAfter: 55 });
    const resumed = await drive(w.source(), w.store, { commitEvery: 7 });

    const all = [...killed.entries, ...resumed.entries].map((e) => requestId(e.line));
    const seen = counts(all);
    assert.deepEqual(new Set(seen.keys()), new Set(ids(0, 120)));
    const duplicated = [...seen].filter(([, n]) => n > 1).map(([id]) => id);
    // Rows 40..54 of file 2 were shipped before the kill and shipped again: file 2 only, once more.
    assert.deepEqual(duplicated, ids(40, 55));
    assert.ok([...seen.values()].every((n) => n <= 2));
  });

  it("takes every file when more files share one CreatedDate than a listing page holds", async (t) => {
    const w = await elfWorld(t);
    for (let n = 1; n <= 7; n++) elfFile(w.sim.data, { n, eventType: "API", createdMs: T0, rows: 3 });
    const first = await drive(w.source({ page_size: 2 }), w.store);
    assert.equal(first.entries.length, 21);
    const stored = JSON.parse(w.store.map.get("eventlogfile:API")!) as { ids: unknown[] };
    assert.equal(stored.ids.length, 7);
    const second = await drive(w.source({ page_size: 2 }), w.store);
    assert.equal(second.entries.length, 0);
  });

  it("streams a 50 000-row file through without loss", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 50_000 });
    const source = w.source();
    let n = 0;
    let last = "";
    for await (const e of eachEntry(source.events(w.store, new AbortController().signal))) {
      n++;
      last = requestId(e.line);
    }
    assert.equal(n, 50_000);
    assert.equal(last, "sim-API-49999");
  });
});

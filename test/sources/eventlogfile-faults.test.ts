import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { elfFile } from "../../src/sim/salesforce-rest/index.ts";
import { counts, drive } from "./shaping-harness.ts";
import { HOUR, T0, elfType, elfWorld, ids, requestId } from "./eventlogfile-world.ts";

const isLogFile = (id: number) => (path: string) =>
  path.includes(`0ATSIM${String(id).padStart(12, "0")}/LogFile`);

describe("EventLogFileSource: faults", () => {
  it("retries a 5xx download within the cycle", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 10 });
    w.sim.faults.add({ route: "elf_csv", kind: "server_error", times: 2 });
    const { entries } = await drive(w.source(), w.store);
    assert.equal(entries.length, 10);
    assert.equal(w.sim.faults.fired.server_error, 2);
  });

  it("re-mints the token once on INVALID_SESSION_ID and carries on", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 4 });
    w.sim.faults.add({ route: "query", kind: "invalid_session", times: 1 });
    assert.equal((await drive(w.source(), w.store)).entries.length, 4);
    assert.equal(w.sim.faults.fired.invalid_session, 1);
  });

  it("a throttled listing ends the cycle for the remaining types; the next cycle delivers them once", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 5 });
    elfFile(w.sim.data, { n: 2, eventType: "Login", createdMs: T0, rows: 6 });
    elfFile(w.sim.data, { n: 3, eventType: "URI", createdMs: T0, rows: 7 });
    w.sim.faults.add({ route: "query", kind: "throttle", times: 1, match: (p) => p.includes("%27Login%27") });
    const settings = { event_types: [elfType("API"), elfType("Login"), elfType("URI")], concurrency: 1 };

    const first = await drive(w.source(settings), w.store);
    assert.deepEqual(new Set(first.entries.map((e) => e.labels.event_type)), new Set(["API"]));
    assert.equal(
      w.sim.stats.queries.filter((q) => q.includes("'URI'")).length,
      0,
      "no call after the throttle",
    );

    const second = await drive(w.source(settings), w.store);
    const all = counts([...first.entries, ...second.entries].map((e) => requestId(e.line)));
    assert.equal(all.size, 18);
    assert.ok([...all.values()].every((n) => n === 1));
  });

  it("a connection cut mid-CSV ends the type without advancing; the file is replayed next cycle", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 100 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 10 });
    w.sim.faults.add({ route: "elf_csv", kind: "cut", times: 1, afterBytes: 6_000, match: isLogFile(1) });

    const first = await drive(w.source(), w.store, { commitEvery: 5 });
    assert.ok(
      first.entries.length > 0 && first.entries.length < 100,
      `${first.entries.length} rows before the cut`,
    );
    assert.equal(first.checkpointOnly.length, 0);
    assert.equal(
      (JSON.parse(w.store.map.get("eventlogfile:API")!) as { ids: unknown[] }).ids.length,
      0,
      "the cut file is not done",
    );

    const second = await drive(w.source(), w.store);
    assert.deepEqual(
      second.entries.map((e) => requestId(e.line)),
      ids(0, 110),
    );
  });

  it("a 2xx listing that is not JSON is contained (#94) and the next cycle recovers", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 3 });
    w.sim.faults.add({ route: "query", kind: "html", times: 1 });
    const first = await drive(w.source(), w.store);
    assert.equal(first.entries.length, 0);
    assert.equal((await drive(w.source(), w.store)).entries.length, 3);
  });

  it("skips a listed row without an Id instead of crashing (#94)", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 3 }).Id = "";
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + 1000, rows: 2 });
    const { entries } = await drive(w.source(), w.store);
    assert.deepEqual(
      entries.map((e) => requestId(e.line)),
      ids(3, 5),
    );
  });

  it("parses a 300 000-character field (#41)", async (t) => {
    const w = await elfWorld(t);
    const big = "x".repeat(300_000);
    elfFile(w.sim.data, {
      n: 1,
      eventType: "API",
      createdMs: T0,
      rows: 3,
      customize: (n, cells) => (n === 1 ? [...cells.slice(0, 7), big, ...cells.slice(8)] : cells),
    });
    const { entries } = await drive(w.source(), w.store);
    assert.equal(entries.length, 3);
    assert.equal((JSON.parse(entries[1]!.line) as { URI: string }).URI, big);
  });

  it("a corrupt row mid-file holds a young file back and abandons it once older than download_max_age (#41)", async (t) => {
    const w = await elfWorld(t);
    const corrupt = (n: number, cells: string[]) =>
      n === 30 ? `"bad"quote",${cells.slice(1).join(",")}\n` : cells;
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 50, customize: corrupt });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 5 });

    const young = await drive(w.source(), w.store);
    assert.ok(young.entries.length <= 30);
    assert.ok(
      young.entries.every((e) => (JSON.parse(e.checkpoint.value) as { ids: unknown[] }).ids.length === 0),
    );

    w.clock.advance(25 * HOUR);
    const old = await drive(w.source(), w.store);
    const shipped = old.entries.map((e) => requestId(e.line));
    assert.deepEqual(shipped.slice(-5), ids(50, 55), "the file after the abandoned one flows");
    const stored = JSON.parse(w.store.map.get("eventlogfile:API")!) as { ids: [string, string][] };
    assert.deepEqual(
      stored.ids.map(([id]) => id),
      ["0ATSIM000000000001", "0ATSIM000000000002"],
    );
  });

  it("a stored watermark that does not parse falls back to the lookback window (#103)", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0 - 30 * HOUR, rows: 2 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0, rows: 3 });
    for (const junk of ['{"ids": [], "last_created": "None"}', "not json at all", "", "42"]) {
      w.store.map.set("eventlogfile:API", junk);
      const { entries } = await drive(w.source(), w.store);
      assert.deepEqual(
        entries.map((e) => requestId(e.line)),
        ids(2, 5),
        `stored ${JSON.stringify(junk)}`,
      );
    }
  });

  it("reads a bare timestamp checkpoint, as `state set` writes it (#103)", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 2 });
    elfFile(w.sim.data, { n: 2, eventType: "API", createdMs: T0 + HOUR, rows: 3 });
    w.store.map.set("eventlogfile:API", "2026-01-01T10:30:00.000+0000");
    const { entries } = await drive(w.source(), w.store);
    assert.deepEqual(
      entries.map((e) => requestId(e.line)),
      ids(2, 5),
    );
  });

  it("a failing checkpoint load is retried, not fatal", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 2 });
    w.store.failNextLoads = 2;
    assert.equal((await drive(w.source(), w.store)).entries.length, 2);
  });

  it("stopping the consumer early cancels the workers and closes the stream", async (t) => {
    const w = await elfWorld(t);
    elfFile(w.sim.data, { n: 1, eventType: "API", createdMs: T0, rows: 50_000 });
    elfFile(w.sim.data, { n: 2, eventType: "Login", createdMs: T0, rows: 50_000 });
    const source = w.source({ event_types: [elfType("API"), elfType("Login")], concurrency: 2 });
    const got = await drive(source, w.store, { killAfter: 10 });
    assert.equal(got.entries.length, 10);
    assert.ok(w.sim.stats.bytesServed < 50_000 * 330, "the rest of the files was never pulled");
  });
});

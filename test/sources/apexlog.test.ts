import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { apexLogQuery } from "../../src/salesforce/apexlog.ts";
import { sfDatetime, simApexLog, simId, type SimApexLog } from "../../src/sim/salesforce-rest/index.ts";
import { ApexLogSource } from "../../src/sources/apexlog/source.ts";
import { APEXLOG_DEFAULTS, type ApexLogSettings } from "../../src/sources/apexlog/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryCheckpoints, counts, drive, simOrg } from "./shaping-harness.ts";

const NOW = Date.UTC(2026, 0, 1, 12);
const MIN = 60_000;

function apex(n: number, startMs: number, extra: Partial<SimApexLog> = {}): SimApexLog {
  return simApexLog(n, startMs, {
    body: `60.0 APEX_CODE,DEBUG\n12:00:00.0 (1)|EXECUTION_STARTED\nlog ${n}\n`,
    ...extra,
  });
}

async function world(t: TestContext, logs: SimApexLog[]) {
  const clock = new ManualClock({ startMs: NOW });
  const { sim, tokens, rest } = await simOrg(t, clock, { apexLogs: logs });
  const store = new MemoryCheckpoints();
  const source = (settings: Partial<ApexLogSettings> = {}) =>
    new ApexLogSource({
      settings: { ...APEXLOG_DEFAULTS, enabled: true, ...settings },
      tokens,
      apiVersion: "60.0",
      structuredMetadataFields: [],
      clock,
      once: true,
      rest,
    });
  return { clock, sim, store, source };
}

const bodyId = (line: string): number => Number(/log (\d+)/.exec(line)?.[1] ?? -1);
const logIds = (entries: readonly { line: string }[]) => entries.map((e) => bodyId(e.line));
const seq = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

describe("ApexLogSource", () => {
  it("ships every body once over the compound cursor, across pages", async (t) => {
    const w = await world(
      t,
      Array.from({ length: 250 }, (_, i) => apex(i, NOW - 50 * MIN + i * 1000)),
    );
    const { entries } = await drive(w.source(), w.store, { commitEvery: 11 });
    assert.deepEqual(logIds(entries), seq(0, 250));
    const e = entries[5]!;
    assert.deepEqual(e.labels, { source: "apexlog", event_type: "apexlog" });
    assert.equal(e.structuredMetadata.level, "warn");
    assert.equal(e.structuredMetadata.Operation, "/apex/AccountPage");
    assert.equal(e.structuredMetadata.DurationMilliseconds, "45");
    assert.equal(e.timestampNs, BigInt(NOW - 50 * MIN + 5000) * 1_000_000n);
    assert.ok(w.store.map.get("apexlog")!.startsWith('{"ids": ["07LSIM'));
    assert.equal((await drive(w.source(), w.store)).entries.length, 0, "a restart repeats nothing");
  });

  it("builds the exact compound-cursor SOQL, escaping every literal (#112, #150)", () => {
    assert.equal(
      apexLogQuery("2026-01-01T11:00:00.000+0000", "07LSIM000000000001", [
        "dev@example.com",
        "o'brien@example.com",
      ]),
      "SELECT Id, LogUserId, LogLength, Operation, Request, Status, StartTime, Application, DurationMilliseconds, Location FROM ApexLog" +
        " WHERE (StartTime > 2026-01-01T11:00:00.000Z OR (StartTime = 2026-01-01T11:00:00.000Z AND Id > '07LSIM000000000001'))" +
        " AND LogUser.Username IN ('dev@example.com','o\\'brien@example.com') ORDER BY StartTime ASC, Id ASC LIMIT 200",
    );
    assert.ok(apexLogQuery("2026-01-01T11:00:00Z", "x' OR Id != '", []).includes("Id > 'x\\' OR Id != \\''"));
    assert.ok(
      apexLogQuery("2026-01-01T11:00:00Z", undefined, []).includes(
        "WHERE StartTime >= 2026-01-01T11:00:00.000Z ORDER",
      ),
    );
  });

  it("filters by user on the server", async (t) => {
    const w = await world(
      t,
      Array.from({ length: 10 }, (_, i) => apex(i, NOW - 30 * MIN + i)),
    );
    const { entries } = await drive(w.source({ users: ["ops@example.com"] }), w.store);
    assert.deepEqual(logIds(entries), [1, 3, 5, 7, 9]);
  });

  it("drains 300 logs sharing one StartTime without stalling", async (t) => {
    const w = await world(
      t,
      Array.from({ length: 300 }, (_, i) => apex(i, NOW - 30 * MIN)),
    );
    assert.deepEqual(logIds((await drive(w.source(), w.store)).entries), seq(0, 300));
  });

  it("after a kill mid-cycle replays only what was not committed", async (t) => {
    const w = await world(
      t,
      Array.from({ length: 120 }, (_, i) => apex(i, NOW - 50 * MIN + i * 1000)),
    );
    const killed = await drive(w.source(), w.store, { commitEvery: 10, killAfter: 57 });
    const resumed = await drive(w.source(), w.store);
    const seen = counts([...logIds(killed.entries), ...logIds(resumed.entries)].map(String));
    assert.equal(seen.size, 120);
    assert.deepEqual(
      [...seen].filter(([, n]) => n > 1).map(([id]) => Number(id)),
      seq(50, 57),
    );
  });

  it("retries a transient body failure and never advances past a young log it could not fetch (#93)", async (t) => {
    const w = await world(
      t,
      Array.from({ length: 10 }, (_, i) => apex(i, NOW - 30 * MIN + i * 1000)),
    );
    const body5 = (p: string) => p.includes(`${simId("07L", 5)}/Body`);
    w.sim.faults.add({
      route: "apexlog_body",
      kind: "server_error",
      times: 1,
      match: (p) => p.includes(`${simId("07L", 2)}/Body`),
    });
    w.sim.faults.add({ route: "apexlog_body", kind: "cut", afterBytes: 10, times: 3, match: body5 });
    const first = await drive(w.source(), w.store);
    assert.deepEqual(logIds(first.entries), [0, 1, 2, 3, 4]);
    const second = await drive(w.source(), w.store);
    assert.deepEqual(logIds(second.entries), [5, 6, 7, 8, 9]);
    assert.equal(second.entries[0]!.structuredMetadata.body_skipped, undefined);
  });

  it("ships an old log's metadata when its body keeps failing", async (t) => {
    const w = await world(t, [apex(1, NOW - 3 * 60 * MIN + MIN), apex(2, NOW - 3 * 60 * MIN + 2 * MIN)]);
    w.sim.faults.add({ route: "apexlog_body", kind: "server_error", times: 3 });
    const { entries } = await drive(w.source({ lookback: 4 * 60 * MIN }), w.store);
    assert.equal(entries.length, 2);
    assert.equal(entries[0]!.structuredMetadata.body_skip_reason, "download_error");
    assert.equal((JSON.parse(entries[0]!.line) as { Id: string }).Id, simId("07L", 1));
    assert.equal(entries[1]!.structuredMetadata.body_skipped, undefined);
  });

  it("does not download a body over max_body_bytes", async (t) => {
    const w = await world(t, [apex(1, NOW - MIN, { LogLength: 10_000_000 }), apex(2, NOW - MIN + 1)]);
    const { entries } = await drive(w.source(), w.store);
    assert.deepEqual(entries[0]!.structuredMetadata.body_skip_reason, "size");
    assert.equal(w.sim.stats.downloads, 1);
  });

  it("a throttled body download ends the cycle without losing the log", async (t) => {
    const w = await world(t, [apex(1, NOW - 2 * MIN), apex(2, NOW - MIN)]);
    w.sim.faults.add({
      route: "apexlog_body",
      kind: "throttle",
      times: 1,
      match: (p) => p.includes(simId("07L", 2)),
    });
    assert.deepEqual(logIds((await drive(w.source(), w.store)).entries), [1]);
    assert.deepEqual(logIds((await drive(w.source(), w.store)).entries), [2]);
  });

  it("persists the cursor with a checkpoint-only entry when every log was filtered", async (t) => {
    const w = await world(t, [apex(1, NOW - 2 * MIN), apex(2, NOW - MIN)]);
    const settings = { transforms: [{ action: "drop_row" as const, match: { Location: "Monitoring" } }] };
    const first = await drive(w.source(settings), w.store);
    assert.equal(first.entries.length, 0);
    assert.equal(first.checkpointOnly.length, 1);
    assert.equal(w.sim.stats.downloads, 0);
    assert.equal(
      (JSON.parse(w.store.map.get("apexlog")!) as { last_ts: string }).last_ts,
      sfDatetime(NOW - MIN),
    );
  });

  it("ignores a stored Id that is not a Salesforce Id (#150)", async (t) => {
    const w = await world(t, [apex(1, NOW - 2 * MIN)]);
    w.store.map.set("apexlog", `{"ids": ["07L' OR Id != '"], "last_ts": "2026-01-01T11:00:00.000+0000"}`);
    assert.deepEqual(logIds((await drive(w.source(), w.store)).entries), [1]);
    assert.ok(w.sim.stats.queries[0]!.includes("WHERE StartTime >= 2026-01-01T11:00:00.000Z"));
  });
});

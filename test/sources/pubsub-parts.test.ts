import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../src/model.ts";
import { Bridge } from "../../src/sources/pubsub/bridge.ts";
import { topicsFromSObjects } from "../../src/sources/pubsub/discovery.ts";
import { decodeReplayId, encodeReplayId } from "../../src/sources/pubsub/replay.ts";
import { sampleRateFor } from "../../src/sources/pubsub/sample.ts";
import { eventTimestampNs } from "../../src/sources/pubsub/shape.ts";
import { eventTypeOf, filterTopics } from "../../src/sources/pubsub/topics.ts";

describe("topic filter", () => {
  it("dedupes keeping first order, skips the * marker, applies include then exclude", () => {
    const topics = ["*", "/event/B", "/event/A", "/event/B", "/data/X", "/event/Lightning"];
    assert.deepEqual(filterTopics(topics, { include: ["/event/*"], exclude: ["*Lightning*"] }), [
      "/event/B",
      "/event/A",
    ]);
    assert.deepEqual(filterTopics(topics, { include: [], exclude: [] }), [
      "/event/B",
      "/event/A",
      "/data/X",
      "/event/Lightning",
    ]);
    assert.equal(eventTypeOf("/data/AccountChangeEvent"), "AccountChangeEvent");
  });
});

describe("replay id codec", () => {
  it("round-trips standard padded base64 and rejects anything else", () => {
    const id = Buffer.from([0, 0, 0, 0, 0, 0, 1, 2]);
    assert.equal(encodeReplayId(id), "AAAAAAAAAQI=");
    assert.deepEqual(decodeReplayId("AAAAAAAAAQI="), id);
    for (const bad of ["", "AAAAAAAAAQI", "AAAA AAAA", "not*base64", "AAAAAAAAAQI=x", "-_-_", "A==="]) {
      assert.equal(decodeReplayId(bad), undefined, bad);
    }
  });
});

describe("entry time", () => {
  it("takes EventDate, then CreatedDate, then ChangeEventHeader.commitTimestamp", () => {
    const base = BigInt(Date.UTC(2026, 5, 30, 1, 0, 0)) * 1_000_000n;
    assert.equal(eventTimestampNs({ EventDate: 1_000, CreatedDate: "2026-06-30T01:00:00Z" }), 1_000_000_000n);
    assert.equal(eventTimestampNs({ EventDate: null, CreatedDate: "2026-06-30T01:00:00.000+0000" }), base);
    assert.equal(eventTimestampNs({ ChangeEventHeader: { commitTimestamp: 1_000 } }), 1_000_000_000n);
    assert.equal(eventTimestampNs({ EventDate: "garbage" }), undefined);
  });
});

describe("sampling", () => {
  it("takes the first matching glob in map order", () => {
    const sample = { "/event/Login*": 0.1, "*": 0.5 };
    assert.equal(sampleRateFor("/event/LoginEventStream", sample), 0.1);
    assert.equal(sampleRateFor("/event/ApiEventStream", sample), 0.5);
    assert.equal(sampleRateFor("/event/ApiEventStream", {}), 1);
  });
});

describe("bridge", () => {
  const entry = (line: string): LogEntry =>
    new LogEntry({ timestampNs: 1n, labels: {}, line, checkpoint: { key: "k", value: "v" } });

  it("blocks producers at the entry bound and releases them as entries are taken", async () => {
    const bridge = new Bridge(2, 0);
    const signal = new AbortController().signal;
    await bridge.put(entry("a"), signal);
    await bridge.put(entry("b"), signal);
    let third = false;
    const p = bridge.put(entry("c"), signal).then(() => (third = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(third, false);
    assert.equal((await bridge.takeRun(signal, 1))?.[0]?.line, "a");
    await p;
    assert.equal(bridge.size, 2);
  });

  it("charges line bytes + 64, lets a single entry overshoot, and frees bytes on take", async () => {
    const bridge = new Bridge(1000, 100);
    const signal = new AbortController().signal;
    await bridge.put(entry("x".repeat(500)), signal);
    assert.equal(bridge.bytes, 564);
    let second = false;
    const p = bridge.put(entry("y"), signal).then(() => (second = true));
    await new Promise((r) => setImmediate(r));
    assert.equal(second, false);
    await bridge.takeRun(signal, 1);
    await p;
    assert.equal(bridge.bytes, 65);
    await bridge.put(LogEntry.checkpointOnly({ key: "k", value: "v" }, 1n), signal);
    assert.equal(bridge.bytes, 65);
  });

  it("delivers sentinels in FIFO order without blocking, and aborts blocked producers", async () => {
    const bridge = new Bridge(1, 0);
    const ac = new AbortController();
    await bridge.put(entry("a"), ac.signal);
    bridge.sentinel();
    const blocked = bridge.put(entry("b"), ac.signal);
    ac.abort();
    await assert.rejects(blocked);
    const live = new AbortController().signal;
    assert.equal((await bridge.takeRun(live, 1))?.[0]?.line, "a");
    assert.equal(await bridge.takeRun(live, 1), null);
  });

  it("hands out the entries queued in a row, at most max, never past a producer's end marker", async () => {
    const bridge = new Bridge(100, 0);
    const signal = new AbortController().signal;
    for (const line of ["a", "b", "c"]) await bridge.put(entry(line), signal);
    bridge.sentinel();
    await bridge.put(entry("d"), signal);
    const lines = (run: LogEntry[] | null): string[] | null => run && run.map((e) => e.line);
    assert.deepEqual(lines(await bridge.takeRun(signal, 2)), ["a", "b"]);
    assert.equal(bridge.size, 2);
    assert.deepEqual(lines(await bridge.takeRun(signal, 10)), ["c"]);
    assert.equal(await bridge.takeRun(signal, 10), null);
    assert.deepEqual(lines(await bridge.takeRun(signal, 10)), ["d"]);
    assert.equal(bridge.size, 0);
    assert.equal(bridge.bytes, 0);
  });
});

describe("discovery rules", () => {
  it("finds *EventStream and <X>Event with an <X>EventStore twin (#122)", () => {
    const found = topicsFromSObjects([
      "Account",
      "LoginEventStream",
      "ApiEventStream",
      "LoginEvent",
      "ApiAnomalyEvent",
      "ApiAnomalyEventStore",
      "LoginAnomalyEvent",
      "LoginAnomalyEventStore",
      "UniversalAnomalyEvent",
      "UniversalAnomalyEventStore",
      "Order_Shipped__e",
      "AccountChangeEvent",
    ]);
    assert.deepEqual(found.streams, ["/event/ApiEventStream", "/event/LoginEventStream"]);
    assert.deepEqual(found.storePairs, [
      "/event/ApiAnomalyEvent",
      "/event/LoginAnomalyEvent",
      "/event/UniversalAnomalyEvent",
    ]);
  });
});

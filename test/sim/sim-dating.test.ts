// #10 item 8: the simulated org speaks the present. Its backlog is dated backwards from its start
// (the newest event is "now"), live events as they are published, none in the future and none older
// than Loki's default reject_old_samples_max_age (7 days).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { backlogEventMs, MAX_BACKLOG_SPAN_MS } from "../../src/sim/salesforce/events.ts";
import { TopicLog } from "../../src/sim/salesforce/topic-log.ts";

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 11, 1, 9, 30);

function decoded(log: TopicLog, seq: number): { EventDate: number; CreatedDate: number } {
  const rec = log.schema.type.fromBuffer(log.payload(seq)) as Record<string, unknown>;
  const ms = (v: unknown): number => (v instanceof Date ? v.getTime() : Number(v));
  return { EventDate: ms(rec.EventDate), CreatedDate: ms(rec.CreatedDate) };
}

describe("simulated org dating", () => {
  it("dates the backlog backwards from the start, newest = start, one second apart", () => {
    let now = T0;
    const log = new TopicLog("/event/LoginEventStream", 1, 100, Number.MAX_SAFE_INTEGER, () => now);
    assert.equal(decoded(log, 100).CreatedDate, T0);
    assert.equal(decoded(log, 1).CreatedDate, T0 - 99_000);
    assert.equal(decoded(log, 1).EventDate, T0 - 99_000 - 5);
    now = T0 + 60_000;
    // Same instance, same bytes: the offsets do not move with the clock.
    assert.equal(decoded(log, 1).CreatedDate, T0 - 99_000);
  });

  it("dates live events as they are published, never before an earlier one", () => {
    let now = T0;
    const log = new TopicLog("/event/ApiEventStream", 1, 10, Number.MAX_SAFE_INTEGER, () => now);
    now = T0 + 5_000;
    log.publish(2);
    now = T0 + 1_000; // a clock stepping back
    log.publish(1);
    assert.equal(decoded(log, 11).CreatedDate, T0 + 5_000);
    assert.equal(decoded(log, 12).CreatedDate, T0 + 5_000);
    assert.equal(decoded(log, 13).CreatedDate, T0 + 5_000);
  });

  it("keeps any backlog inside 6 days (Loki's default reject_old_samples_max_age is 7)", () => {
    for (const backlog of [1, 20_000, 1_000_000, 50_000_000]) {
      const oldest = backlogEventMs(T0, backlog, 1);
      assert.ok(T0 - oldest <= MAX_BACKLOG_SPAN_MS, `backlog ${backlog}`);
      assert.ok(T0 - oldest < 7 * DAY);
      assert.equal(backlogEventMs(T0, backlog, backlog), T0);
    }
  });

  it("never dates an event in the future of the org's clock", () => {
    const now = Date.now();
    const log = new TopicLog("/event/LightningUriEventStream", 3, 500, Number.MAX_SAFE_INTEGER);
    for (const seq of [1, 250, 500]) assert.ok(decoded(log, seq).CreatedDate <= Date.now());
    assert.ok(decoded(log, 500).CreatedDate >= now);
  });
});

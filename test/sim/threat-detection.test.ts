// The simulated org's newer Threat Detection events (#38): LoginAnomalyEvent and UniversalAnomalyEvent
// stream with their documented fields through Avro, and their *Store twins answer the very SOQL the
// eventlog-objects source sends, with the same fields.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { ascendingQuery } from "../../src/sources/eventlog-objects/query.ts";
import { buildTopicSchema, generateEvent } from "../../src/sim/salesforce/events.ts";
import {
  ANOMALY_SUBTYPES,
  THREAT_EVENTS,
  THREAT_FIELDS,
  threatEventOf,
} from "../../src/sim/salesforce/threat-detection.ts";
import { DEFAULT_SOBJECTS, sfDatetime, type SimData } from "../../src/sim/salesforce-rest/data.ts";
import { addPollingData } from "../../src/sim/salesforce-rest/generate.ts";
import { runQuery } from "../../src/sim/salesforce-rest/query.ts";

const NOW = Date.parse("2026-03-01T12:00:00.000Z");

function emptyData(): SimData {
  return {
    objects: {},
    bigObjects: new Set(),
    eventLogFiles: [],
    apexLogs: [],
    limits: {},
    sobjects: [...DEFAULT_SOBJECTS],
    traceFlags: [],
  };
}

function assertAnomaly(r: Record<string, unknown>, where: string): void {
  assert.equal(typeof r.Score, "number", `${where}: Score`);
  assert.ok((r.Score as number) >= 0 && (r.Score as number) <= 100, `${where}: Score ${String(r.Score)}`);
  const features = JSON.parse(r.SecurityEventData as string) as { featureContribution: string }[];
  assert.equal(features.length, 5, `${where}: the top five features`);
  const total = features.reduce((a, f) => a + Number.parseFloat(f.featureContribution), 0);
  assert.ok(total <= 100.001, `${where}: contributions sum to ${total}`);
  assert.match(r.Summary as string, /@example\.com/, `${where}: Summary names the user`);
}

describe("Threat Detection events of the simulated org", () => {
  for (const event of THREAT_EVENTS) {
    it(`${event}: every documented field in the schema, each event round-trips through Avro`, () => {
      const schema = buildTopicSchema(`/event/${event}`);
      const names = (JSON.parse(schema.schemaJson) as { fields: { name: string }[] }).fields.map(
        (f) => f.name,
      );
      for (const [f] of THREAT_FIELDS[event]) assert.ok(names.includes(f), `${event} lacks ${f}`);
      for (const f of ["EventIdentifier", "EventDate", "UserId", "Username", "SourceIp", "LoginKey"])
        assert.ok(names.includes(f), `${event} lacks ${f}`);
      for (let n = 1; n <= 40; n++) {
        const e = generateEvent(7, schema, n, NOW);
        assert.deepEqual(
          { ...(schema.type.fromBuffer(schema.type.toBuffer(e)) as object) },
          e,
          `${event} #${n}`,
        );
        assertAnomaly(e, `${event} #${n}`);
      }
    });
  }

  it("UniversalAnomalyEvent's AnomalySubType cycles through the documented values", () => {
    const schema = buildTopicSchema("/event/UniversalAnomalyEvent");
    const subtypes = Array.from(
      { length: 12 },
      (_, i) => generateEvent(7, schema, i + 1, NOW).AnomalySubType,
    );
    assert.deepEqual(subtypes, [...ANOMALY_SUBTYPES, ...ANOMALY_SUBTYPES]);
    assert.equal(
      generateEvent(7, buildTopicSchema("/event/LoginAnomalyEvent"), 1, NOW).AnomalySubType,
      undefined,
    );
  });

  it("the *Store objects answer the eventlog-objects source's SOQL with the event's fields", () => {
    const data = emptyData();
    addPollingData(
      data,
      { objects: { LoginAnomalyEventStore: { records: 30 }, UniversalAnomalyEventStore: { records: 250 } } },
      NOW,
    );
    for (const event of THREAT_EVENTS) {
      const store = `${event}Store`;
      assert.ok(
        data.sobjects.includes(event) && data.sobjects.includes(store),
        `describeGlobal lists ${store}`,
      );
      assert.equal(threatEventOf(store), event);
      const soql = ascendingQuery(store, "EventDate", sfDatetime(NOW - 3_600_000), undefined, undefined);
      const page = runQuery(soql, data, NOW, false);
      assert.equal(page.length, Math.min(200, data.objects[store]!.length), `${store}: one full page`);
      const dates = page.map((r) => Date.parse(String(r.EventDate).replace("+0000", "Z")));
      assert.deepEqual(
        dates,
        [...dates].sort((a, b) => a - b),
        `${store}: ordered by EventDate`,
      );
      for (const r of page) {
        for (const [f] of THREAT_FIELDS[event]) assert.ok(f in r, `${store} ${String(r.Id)} lacks ${f}`);
        assertAnomaly(r, `${store} ${String(r.Id)}`);
      }
    }
    const universal = runQuery(
      "SELECT AnomalySubType FROM UniversalAnomalyEventStore GROUP BY AnomalySubType",
      data,
      NOW,
      false,
    ).map((r) => r.AnomalySubType);
    assert.deepEqual([...universal].sort(), [...ANOMALY_SUBTYPES].sort());
  });
});

// Every source of `sf2loki sim` into the real Loki, with protobuf+snappy and with JSON+gzip (#26 case
// 1): per source and event type the count LogQL gives equals what the simulated org holds, each
// stream's labels are the documented ones, a configured structured-metadata field filters in LogQL,
// and a Pub/Sub entry is stored at its event's own time. Then the newer Threat Detection events (#38):
// streamed and polled, counted exactly per type, and filtered on their Score.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { DEMO_POLLING } from "../../src/sim/demo-polling.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { buildTopicSchema, generateEvent } from "../../src/sim/salesforce/events.ts";
import { checkOverlap, OverlapError, type OverlapSourcesConfig } from "../../src/sources/overlap.ts";
import { tempDir } from "../support/tmp.ts";
import { runDaemon } from "../support/two-orgs.ts";
import { nowNs, realLokiForFile, type LokiReader } from "./support/real-loki.ts";
import { emittedBySource, storedBySource } from "./support/sim-counts.ts";

const shared = realLokiForFile();
const EVENTS = 200;
const DAY_NS = 86_400_000_000_000n;
/** docs/observability.md: job, source, event_type and, where set, environment, sf_org_id and org. */
const DOCUMENTED = new Set([
  "job",
  "service_name",
  "source",
  "event_type",
  "environment",
  "sf_org_id",
  "org",
]);

/**
 * Runs the daemon (one poll of each polled source) until Loki holds every entry `expected` counts,
 * then flushes: rows dated hours back are read from the store once flushed.
 */
async function shipAll(
  tree: Record<string, unknown>,
  tenant: string,
  expected: Record<string, number>,
): Promise<{ reader: LokiReader; range: readonly [bigint, bigint] }> {
  const want = Object.values(expected).reduce((a, b) => a + b, 0);
  const reader = shared.loki.reader(tenant);
  const range = [nowNs() - 7n * DAY_NS, nowNs() + 60_000_000_000n] as const;
  await runDaemon(tree, {
    pollOnce: true,
    what: `${want} entries in Loki`,
    until: async () => (await reader.count('{job="sf2loki"}', ...range)) >= want,
  });
  await shared.loki.flush();
  return { reader, range };
}

for (const wire of [
  { encoding: "protobuf", compression: "snappy" },
  { encoding: "json", compression: "gzip" },
] as const) {
  test(
    `every sim source lands with exact counts over ${wire.encoding}+${wire.compression}`,
    { skip: shared.missing },
    async (t) => {
      const loki = shared.loki;
      const tenant = `sources-${wire.encoding}`;
      const world = await startDemoWorld({ eventsPerTopic: EVENTS, polling: DEMO_POLLING });
      t.after(() => world.stop());
      const tree = world.config(join(tempDir(), "state.json")) as { sink: { loki: Record<string, unknown> } };
      tree.sink.loki = {
        ...tree.sink.loki,
        url: loki.pushUrl,
        tenant_id: tenant,
        ...wire,
        structured_metadata_fields: ["UserId", "USER_ID"],
      };
      const expected = emittedBySource(world, EVENTS);
      const { reader, range } = await shipAll(tree, tenant, expected);

      const got = await storedBySource(reader, '{job="sf2loki"}', range, expected);
      assert.deepEqual(got, expected, "count_over_time per source and event type");

      for (const series of await reader.series('{job="sf2loki"}', ...range)) {
        const names = Object.keys(series);
        assert.ok(
          names.every((n) => DOCUMENTED.has(n)),
          `undocumented label in ${JSON.stringify(series)}`,
        );
        for (const n of ["job", "source", "event_type", "sf_org_id"])
          assert.ok(n in series, `${n} missing from ${JSON.stringify(series)}`);
      }

      const logins = await reader.entries('{source="pubsub", event_type="LoginEventStream"}', ...range);
      assert.equal(logins.length, EVENTS);
      const sample = logins[17]!;
      const user = /"UserId": ?"([^"]+)"/.exec(sample.line)?.[1];
      assert.ok(user, `a UserId in ${sample.line.slice(0, 200)}`);
      const filtered = await reader.entries(
        `{source="pubsub", event_type="LoginEventStream"} | UserId="${user}"`,
        ...range,
      );
      assert.ok(filtered.length >= 1, "the structured-metadata field filters");
      assert.ok(
        filtered.every(
          (e) => e.line.includes(`"UserId": "${user}"`) || e.line.includes(`"UserId":"${user}"`),
        ),
        "and only entries of that user pass",
      );
      const eventDate = /"EventDate": ?"?([^",}]+)/.exec(sample.line)?.[1];
      assert.ok(eventDate, `an EventDate in ${sample.line.slice(0, 200)}`);
      const eventMs = /^\d+$/.test(eventDate) ? Number(eventDate) : Date.parse(eventDate);
      assert.equal(Number(sample.tsNs / 1_000_000n), eventMs, "stored at the event's own time");
    },
  );
}

test(
  "Threat Detection events land with exact counts per type, and a Score filter counts exactly the high ones",
  { skip: shared.missing },
  async (t) => {
    const loki = shared.loki;
    const tenant = "threat-detection";
    const topics = ["/event/LoginAnomalyEvent", "/event/UniversalAnomalyEvent"];
    const store = "UniversalAnomalyEventStore";
    const world = await startDemoWorld({
      eventsPerTopic: EVENTS,
      topics,
      polling: { objects: { [store]: { records: 300 } } },
    });
    t.after(() => world.stop());
    const tree = world.config(join(tempDir(), "state.json")) as {
      sources: OverlapSourcesConfig;
      sink: { loki: Record<string, unknown> };
    };
    // Streaming UniversalAnomalyEvent and polling its store ingests one category twice: the guard
    // refuses it unless the operator says so, as one who wants both (here, to count each) does.
    assert.throws(() => {
      checkOverlap(tree.sources);
    }, OverlapError);
    tree.sources.allow_overlap = true;
    tree.sink.loki = {
      ...tree.sink.loki,
      url: loki.pushUrl,
      tenant_id: tenant,
      structured_metadata_fields: ["Score", "AnomalySubType"],
    };
    const names = topics.map((topic) => topic.slice("/event/".length));
    const expected = emittedBySource(world, EVENTS, names);
    assert.deepEqual(expected, {
      "pubsub/LoginAnomalyEvent": EVENTS,
      "pubsub/UniversalAnomalyEvent": EVENTS,
      [`eventlog_objects/${store}`]: 300,
    });
    const { reader, range } = await shipAll(tree, tenant, expected);

    const got = await storedBySource(reader, '{job="sf2loki"}', range, expected);
    assert.deepEqual(got, expected, "count_over_time per source and event type");

    // What the org emitted with Score > 90: its events regenerated from the seed, its stored records.
    const high: Record<string, number> = {};
    for (const [i, topic] of topics.entries()) {
      const schema = buildTopicSchema(topic);
      let n = 0;
      for (let k = 1; k <= EVENTS; k++) if ((generateEvent(1, schema, k, 0).Score as number) > 90) n++;
      high[`pubsub/${names[i]!}`] = n;
    }
    high[`eventlog_objects/${store}`] = world.org.rest.data.objects[store]!.filter(
      (r) => (r.Score as number) > 90,
    ).length;
    assert.ok(
      Object.values(high).every((n) => n > 0 && n < 300),
      `some, not all, score high: ${JSON.stringify(high)}`,
    );
    const viaJson = await storedBySource(reader, '{job="sf2loki"} | json | Score > 90', range, expected);
    assert.deepEqual(viaJson, high, "| json | Score > 90");
    const viaMetadata = await storedBySource(reader, '{job="sf2loki"} | Score > 90', range, expected);
    assert.deepEqual(viaMetadata, high, "structured metadata | Score > 90");

    // One subtype of the streamed Universal events, by structured metadata: they cycle by event number.
    const guest = await reader.count(
      '{event_type="UniversalAnomalyEvent"} | AnomalySubType="GuestUserAnomaly"',
      ...range,
    );
    assert.equal(guest, Math.floor((EVENTS - 3) / 6) + 1, "every sixth event from the third");
    console.log(`threat-detection counts: ${JSON.stringify(got)}; Score > 90: ${JSON.stringify(high)}`);
  },
);

// Every source of `sf2loki sim` into the real Loki, with protobuf+snappy and with JSON+gzip (#26 case
// 1): per source and event type the count LogQL gives equals what the simulated org holds, each
// stream's labels are the documented ones, a configured structured-metadata field filters in LogQL,
// and a Pub/Sub entry is stored at its event's own time.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { DEMO_POLLING } from "../../src/sim/demo-polling.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { tempDir } from "../support/tmp.ts";
import { runDaemon } from "../support/two-orgs.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";
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
      const want = Object.values(expected).reduce((a, b) => a + b, 0);
      const reader = loki.reader(tenant);
      const range = [nowNs() - 7n * DAY_NS, nowNs() + 60_000_000_000n] as const;
      await runDaemon(tree, {
        pollOnce: true,
        what: `${want} entries in Loki`,
        until: async () => (await reader.count('{job="sf2loki"}', ...range)) >= want,
      });
      await loki.flush(); // rows dated hours back are read from the store once flushed

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

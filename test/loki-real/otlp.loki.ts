// OTLP into the real Loki (#28): the daemon ships the simulated org's Pub/Sub topics to Loki's native
// /otlp/v1/logs, and LogQL alone judges what landed: every event once, under service_name="sf2loki",
// indexed by the labels docs/otlp.md names, the rest as structured metadata. Then a too-old record in
// an export: Loki 3.4.6 answers 400 naming it and stores the rest, which must land exactly once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LogEntry } from "../../src/model.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { LOKI_DEFAULT_LIMITS } from "../../src/sinks/loki/limits.ts";
import { createOtlpSink } from "../../src/sinks/otlp/sink.ts";
import { runApp } from "../support/app.ts";
import { tempDir } from "../support/tmp.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
const missing = shared.missing;
const EVENTS = 1_000;
const ORG_ID = "00D0000000000OTL";

test(
  "every sim Pub/Sub event lands once over OTLP, under service_name and the documented labels",
  { skip: missing },
  async (t) => {
    const world = await startDemoWorld({ seed: 5, eventsPerTopic: EVENTS, orgId: ORG_ID });
    t.after(() => world.stop());
    const tenant = "otlp";
    const tree = world.config(`${tempDir()}/state.json`);
    tree.sink = {
      type: "otlp",
      otlp: { url: `${shared.loki.url}/otlp/v1/logs`, tenant_id: tenant },
      loki: { batch: { flush_interval: "200ms" }, structured_metadata_fields: ["UserId"] },
    };
    const start = nowNs() - 7n * 86_400_000_000_000n;
    const end = (): bigint => nowNs() + 60_000_000_000n;
    runApp(t, tree);
    const reader = shared.loki.reader(tenant);
    const selector = '{service_name="sf2loki"}';
    let counts = new Map<string, number>();
    const deadline = Date.now() + 90_000;
    while (Date.now() < deadline) {
      counts = await reader.countBy(selector, start, end(), ["event_type"]);
      if ([...counts.values()].reduce((a, b) => a + b, 0) >= 3 * EVENTS) break;
      await new Promise((r) => setTimeout(r, 500));
    }
    // count_over_time counts every stored copy: exactly EVENTS means once each.
    assert.deepEqual(Object.fromEntries(counts), {
      LoginEventStream: EVENTS,
      ApiEventStream: EVENTS,
      LightningUriEventStream: EVENTS,
    });
    // Indexed: service.name and deployment.environment, Loki's defaults; everything else is metadata.
    assert.deepEqual(await reader.series(selector, start, end()), [
      { deployment_environment: "production", service_name: "sf2loki" },
    ]);
    const stored = await reader.entries(selector, start, end());
    assert.equal(stored.length, 3 * EVENTS, "distinct entries");
    const ids = new Set(stored.map((e) => /"EventIdentifier": ?"([^"]+)"/.exec(e.line)?.[1]));
    assert.equal(ids.size, 3 * EVENTS, "distinct EventIdentifiers");
    for (const e of stored) {
      assert.equal(e.metadata.salesforce_org_id, ORG_ID);
      assert.equal(e.metadata.source, "pubsub");
      assert.equal(e.metadata.scope_name, "sf2loki");
      assert.equal(e.metadata.severity_text, e.metadata.level);
      assert.ok(e.metadata.event_type && e.metadata.observed_timestamp, JSON.stringify(e.metadata));
    }
    // The Loki sink's selectors have LogQL equivalents over the metadata (docs/otlp.md).
    const login = await reader.count(
      `{service_name="sf2loki"} | salesforce_org_id="${ORG_ID}" | source="pubsub" | event_type="LoginEventStream"`,
      start,
      end(),
    );
    assert.equal(login, EVENTS);
    const withUser = stored.find((e) => e.metadata.UserId);
    assert.ok(withUser, "a configured structured-metadata field arrives as metadata");
    assert.ok(
      (await reader.count(`${selector} | UserId="${withUser.metadata.UserId}"`, start, end())) >= 1,
      "and filters",
    );
  },
);

test(
  "a too-old record in an export: dead-lettered with Loki's words, the valid ones stored exactly once",
  { skip: missing },
  async (t) => {
    const tenant = "otlp-partial";
    const sink = createOtlpSink(
      {
        url: `${shared.loki.url}/otlp/v1/logs`,
        tenant_id: tenant,
        headers: {},
        compression: "gzip",
        service_name: "sf2loki",
        batch: { max_line_bytes: 262_144 },
        // Local checks off, so Loki itself refuses the record and its answer is what is judged.
        limits: { ...LOKI_DEFAULT_LIMITS, enabled: false },
      },
      {},
    );
    t.after(() => sink.close());
    const now = nowNs();
    const labels = {
      job: "sf2loki",
      service_name: "sf2loki",
      environment: "production",
      sf_org_id: ORG_ID,
      source: "pubsub",
      event_type: "LoginEventStream",
    };
    const mk = (i: number, ts: bigint): LogEntry =>
      new LogEntry({
        timestampNs: ts,
        labels,
        line: `{"EventIdentifier":"partial-${i}"}`,
        structuredMetadata: { level: "info" },
        checkpoint: { key: "k", value: String(i) },
      });
    const batch = Array.from({ length: 100 }, (_, i) =>
      mk(i, now - 60_000_000_000n + BigInt(i) * 1_000_000n),
    );
    const old = mk(100, now - 200n * 3_600_000_000_000n);
    batch.splice(50, 0, old);
    const landed: LogEntry[] = [];
    const result = await sink.push(batch, undefined, undefined, (l) => landed.push(...l));
    assert.deepEqual(
      result.dropped.map((g) => [g.reason, g.entries]),
      [["too_old", [old]]],
    );
    assert.match(result.dropped[0]!.detail!, /timestamp too old/);
    assert.equal(landed.length, 100, "told as stored, so a retry would not send them again");
    const reader = shared.loki.reader(tenant);
    const start = now - 3_600_000_000_000n;
    assert.equal(await reader.count('{service_name="sf2loki"}', start, now + 60_000_000_000n), 100);
  },
);

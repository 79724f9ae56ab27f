// OTLP into the real Loki (#28): the daemon ships every source of the simulated org to Loki's native
// /otlp/v1/logs, and LogQL alone judges what landed: every event once, under service_name="sf2loki",
// indexed by the labels docs/otlp.md names, the rest as structured metadata. A Loki that does not
// index sf2loki.stream refuses an org's old rows beside its live ones: dead-lettered, and said. Then a
// too-old record in an export: Loki 3.4.6 answers 400 naming it and stores the rest, exactly once.
import assert from "node:assert/strict";
import { test } from "node:test";
import { LogEntry, type Labels } from "../../src/model.ts";
import { createLogger } from "../../src/obs/logger.ts";
import { DEMO_POLLING } from "../../src/sim/demo-polling.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { LOKI_DEFAULT_LIMITS } from "../../src/sinks/receiving-loki/limits.ts";
import { runDaemon } from "../support/two-orgs.ts";
import { tempDir } from "../support/tmp.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";
import { emittedBySource, storedBySource } from "./support/sim-counts.ts";
import { INDEX_STREAM, otlpSinkTo } from "./support/otlp-sink.ts";

const shared = realLokiForFile();
const missing = shared.missing;
const EVENTS = 1_000;
const ORG_ID = "00D0000000000OTL";

test(
  "every sim source lands once over OTLP, under service_name and the documented labels and metadata",
  { skip: missing },
  async (t) => {
    const tenant = "otlp";
    await shared.loki.setLimits({ [tenant]: INDEX_STREAM, "otlp-shared": {} });
    const world = await startDemoWorld({
      seed: 5,
      eventsPerTopic: EVENTS,
      orgId: ORG_ID,
      polling: DEMO_POLLING,
    });
    t.after(() => world.stop());
    const tree = world.config(`${tempDir()}/state.json`);
    tree.sink = {
      type: "otlp",
      otlp: { url: `${shared.loki.url}/otlp/v1/logs`, tenant_id: tenant },
      loki: { batch: { flush_interval: "200ms" }, structured_metadata_fields: ["UserId", "USER_ID"] },
    };
    const expected = emittedBySource(world, EVENTS);
    const want = Object.values(expected).reduce((a, b) => a + b, 0);
    const start = nowNs() - 7n * 86_400_000_000_000n;
    const end = (): bigint => nowNs() + 60_000_000_000n;
    const reader = shared.loki.reader(tenant);
    const selector = '{service_name="sf2loki"}';
    await runDaemon(tree, {
      pollOnce: true,
      what: `${want} records in Loki`,
      until: async () => (await reader.count(selector, start, end())) >= want,
    });
    await shared.loki.flush(); // rows dated hours back are read from the store once flushed
    // count_over_time counts every stored copy: exactly what the org emitted means once each.
    const got = await storedBySource(reader, selector, [start, end()], expected);
    assert.deepEqual(got, expected, "count_over_time per source and event type");
    // Indexed: service.name, deployment.environment (Loki's defaults) and sf2loki.stream (told to).
    const series = await reader.series(selector, start, end());
    assert.ok(series.length >= Object.keys(expected).length, JSON.stringify(series));
    for (const s of series) {
      assert.deepEqual(Object.keys(s).sort(), ["deployment_environment", "service_name", "sf2loki_stream"]);
      assert.equal(s.service_name, "sf2loki");
    }
    const logins = await reader.entries(`${selector} | event_type="LoginEventStream"`, start, end());
    assert.equal(logins.length, EVENTS, "distinct entries");
    const ids = new Set(logins.map((e) => /"EventIdentifier": ?"([^"]+)"/.exec(e.line)?.[1]));
    assert.equal(ids.size, EVENTS, "distinct EventIdentifiers");
    for (const e of logins) {
      assert.equal(e.metadata.salesforce_org_id, ORG_ID);
      assert.equal(e.metadata.source, "pubsub");
      assert.equal(e.metadata.scope_name, "sf2loki");
      assert.equal(e.metadata.severity_text, e.metadata.level);
      assert.ok(e.metadata.observed_timestamp, JSON.stringify(e.metadata));
    }
    // The Loki sink's selectors have LogQL equivalents (docs/otlp.md).
    const viaStream = await reader.count(
      `{service_name="sf2loki", sf2loki_stream="pubsub/LoginEventStream"} | salesforce_org_id="${ORG_ID}"`,
      start,
      end(),
    );
    assert.equal(viaStream, EVENTS);
    const withUser = logins.find((e) => e.metadata.UserId);
    assert.ok(withUser, "a configured structured-metadata field arrives as metadata");
    assert.ok(
      (await reader.count(`${selector} | UserId="${withUser.metadata.UserId}"`, start, end())) >= 1,
      "and filters",
    );
  },
);

test(
  "a Loki that does not index sf2loki.stream: old rows refused as too far behind are dead-lettered, with the fix said once",
  { skip: missing },
  async (t) => {
    const tenant = "otlp-shared";
    const lines: string[] = [];
    const logger = createLogger({ level: "warn", destination: { write: (l: string) => lines.push(l) } });
    const sink = otlpSinkTo(shared.loki.url, tenant, {}, { logger });
    t.after(() => sink.close());
    const now = nowNs();
    const base = { job: "sf2loki", service_name: "sf2loki", environment: "production", sf_org_id: ORG_ID };
    const live = { ...base, source: "pubsub", event_type: "LoginEventStream" };
    const elf = { ...base, source: "eventlogfile", event_type: "Login" };
    const mk = (labels: Labels, ts: bigint, i: number): LogEntry =>
      new LogEntry({
        timestampNs: ts,
        labels,
        line: `{"n":${i}}`,
        checkpoint: { key: "k", value: String(i) },
      });
    const first = await sink.push([mk(live, now, 0)]);
    assert.deepEqual(first.dropped, []);
    const rows = Array.from({ length: 20 }, (_, i) =>
      mk(elf, now - 3n * 3_600_000_000_000n + BigInt(i), 1 + i),
    );
    const fresh = Array.from({ length: 10 }, (_, i) => mk(live, now - 1_000_000_000n + BigInt(i), 100 + i));
    for (const batch of [[...rows.slice(0, 10), ...fresh], rows.slice(10)]) {
      const result = await sink.push(batch);
      const reasons = result.dropped.map((g) => [g.reason, g.entries.length, g.detail?.slice(0, 300)]);
      assert.ok(
        result.dropped.every((g) => g.reason === "too_far_behind"),
        JSON.stringify(reasons),
      );
    }
    const warned = lines.filter((l) => l.includes("sf2loki.stream"));
    assert.equal(warned.length, 1, "the fix is said once");
    assert.match(warned[0]!, /index_label/);
    const reader = shared.loki.reader(tenant);
    assert.equal(
      await reader.count('{service_name="sf2loki"}', now - 4n * 3_600_000_000_000n, now + 60_000_000_000n),
      11,
    );
  },
);

test(
  "a too-old record in an export: dead-lettered with Loki's words, the valid ones stored exactly once",
  { skip: missing },
  async (t) => {
    const tenant = "otlp-partial";
    // Local checks off, so Loki itself refuses the record and its answer is what is judged.
    const sink = otlpSinkTo(shared.loki.url, tenant, { limits: { ...LOKI_DEFAULT_LIMITS, enabled: false } });
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

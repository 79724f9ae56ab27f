// The daemon end to end over OTLP (#28): the simulated org (OAuth + Pub/Sub gRPC) → sf2loki (app,
// pipeline, OTLP sink, file store) → an independent OTLP receiver decoding every body with the
// official opentelemetry-proto definitions. Counts are exact: every event once.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { startDemoWorld, DEMO_TOPICS } from "../../src/sim/demo-world.ts";
import { startOtlpReceiver } from "../support/otlp-receiver.ts";
import { tempDir } from "../support/tmp.ts";

const EVENTS = 3_000;

test("3 topics x 3 000 events over OTLP: every event once, with the documented resource and attributes", async (t) => {
  const world = await startDemoWorld({ seed: 11, eventsPerTopic: EVENTS, orgId: "00D000000000OTLP" });
  t.after(() => world.stop());
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.stop());
  const tree = world.config(join(tempDir(), "state.json"));
  tree.sink = {
    type: "otlp",
    otlp: { url: receiver.url, tenant_id: "acme" },
    loki: { batch: { flush_interval: "200ms" } },
  };
  const app = createApp(validateConfig(tree));
  const eventId = (body: string): string => /"EventIdentifier": ?"([^"]+)"/.exec(body)?.[1] ?? "";
  const stop = new AbortController();
  const poll = setInterval(() => {
    if (receiver.stored.length >= 3 * EVENTS) stop.abort();
  }, 200);
  try {
    await app.run(stop.signal);
  } finally {
    clearInterval(poll);
  }

  assert.equal(world.loki.counts.requests, 0, "nothing went to the Loki push API");
  assert.ok(receiver.exports.every((e) => e.headers["x-scope-orgid"] === "acme"));
  for (const topic of DEMO_TOPICS) {
    const name = topic.split("/").pop()!;
    const ids = receiver.stored.filter((r) => r.attributes.event_type === name).map((r) => eventId(r.body));
    assert.equal(ids.length, EVENTS, `${name}: records`);
    const distinct = new Set(ids);
    assert.equal(distinct.size, EVENTS, `${name}: distinct events`);
    for (let n = 1; n <= EVENTS; n++)
      assert.ok(distinct.has(`sim-${name}-${n}`), `${name}: sim-${name}-${n}`);
  }
  const resources = new Set(receiver.stored.map((r) => JSON.stringify(r.resource)));
  // One resource per stream: the org's identity and the stream Loki can be told to index.
  assert.deepEqual(
    new Set([...resources].map((r) => JSON.parse(r) as unknown)),
    new Set(
      DEMO_TOPICS.map((topic) => ({
        "service.name": "sf2loki",
        "salesforce.org.id": "00D000000000OTLP",
        "deployment.environment": "production",
        "sf2loki.stream": `pubsub/${topic.split("/").pop()!}`,
      })),
    ),
  );
  // A Loki answers for the last stream of a request only, so a stream shares an export only once
  // Loki accepted it alone (wire/accepted-streams.ts): each stream's first export is its own.
  const seen = new Set<string>();
  for (const e of receiver.exports) {
    const streams = new Set(e.records.map((r) => r.resource["sf2loki.stream"]!));
    if (streams.size > 1)
      for (const s of streams) assert.ok(seen.has(s), `${s} shared an export before it went alone`);
    for (const s of streams) seen.add(s);
  }
  assert.equal(seen.size, DEMO_TOPICS.length);
  for (const r of receiver.stored) {
    assert.equal(r.scope, "sf2loki");
    assert.equal(r.attributes.source, "pubsub");
    assert.equal(r.severityText, r.attributes.level);
    assert.ok(r.severityNumber > 0);
    assert.ok(r.observedNs >= r.timeNs, "observed after the event");
  }
});

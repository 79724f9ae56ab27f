// The sink against the simulated Loki over loopback HTTP: encodings, headers, keep-alive.
import { test } from "node:test";
import assert from "node:assert/strict";
import { T0_NS, entries, entry, harness, settings } from "./support.ts";
import { pino } from "pino";
import type { LokiSinkSettings } from "../../../src/sinks/loki/settings.ts";
import { createLokiSink } from "../../../src/sinks/loki/sink.ts";
import { startLokiReceiver } from "../../../src/sim/loki.ts";
import { ManualClock } from "../../../src/util/clock.ts";

for (const over of [
  { encoding: "protobuf", compression: "snappy" },
  { encoding: "json", compression: "gzip" },
  { encoding: "json", compression: "none" },
] as Partial<LokiSinkSettings>[]) {
  test(`${over.encoding}+${over.compression}: the receiver decodes every field byte-exactly`, async (t) => {
    const { receiver, sink, metrics } = await harness(t, over);
    const batch = [
      entry(0, { ts: T0_NS + 1n, line: 'sub-ns ü€😀 "quoted"\nnext', meta: { z: "last", a: "first" } }),
      entry(1, {
        ts: T0_NS + 999_999_999n,
        labels: { source: "apexlog", event_type: "apexlog", job: "sf2loki" },
      }),
      entry(2, { ts: T0_NS + 1_000_000_001n, line: "", meta: {} }),
      entry(3, { labels: { source: "x", event_type: 'quo"te\\back\nnl' } }),
    ];
    const result = await sink.push(batch);
    assert.deepEqual(result.dropped, []);
    const got = receiver.entries();
    assert.equal(got.length, batch.length);
    const byTs = new Map(got.map((g) => [g.timestampNs, g]));
    for (const e of batch) {
      const g = byTs.get(e.timestampNs);
      assert.ok(g, `entry ${e.timestampNs} missing`);
      assert.equal(g.line, e.line);
      assert.deepEqual(g.labels, e.labels);
      assert.deepEqual(g.metadata, e.structuredMetadata);
    }
    const req = receiver.requests[0]!;
    const expectType = over.encoding === "protobuf" ? "application/x-protobuf" : "application/json";
    assert.equal(req.headers["content-type"], expectType);
    const expectEncoding =
      over.encoding === "protobuf" ? "snappy" : over.compression === "gzip" ? "gzip" : undefined;
    assert.equal(req.headers["content-encoding"], expectEncoding);
    // One request a stream (wire/per-stream.ts); the metric counts every body.
    assert.equal(receiver.requests.length, 3);
    const sent = receiver.requests.reduce((n, r) => n + r.bodyBytes, 0);
    assert.equal(await metrics.sum("sf2loki_loki_bytes_pushed"), sent);
  });
}

test("json with the default snappy compression sends plain JSON and warns once", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const logged: { level: number; msg: string }[] = [];
  const logger = pino(
    { level: "info" },
    { write: (s: string) => logged.push(JSON.parse(s) as (typeof logged)[number]) },
  );
  const sink = createLokiSink(settings(receiver.pushUrl, { encoding: "json", compression: "snappy" }), {
    logger,
    clock: new ManualClock(), // the entries are dated 2026-01-01
  });
  t.after(() => sink.close());
  await sink.push(entries(3));
  await sink.push(entries(3, 3));
  assert.equal(receiver.counts.accepted, 6);
  assert.equal(receiver.requests[0]!.headers["content-encoding"], undefined);
  assert.equal(logged.filter((l) => l.level === 40 && /uncompressed JSON/.test(l.msg)).length, 1);
});

for (const encoding of ["protobuf", "json"] as const) {
  test(`${encoding}: a batch above the 64 KiB offload threshold arrives intact`, async (t) => {
    const { receiver, sink } = await harness(t, { encoding, compression: "gzip" });
    const batch = Array.from({ length: 300 }, (_, i) => entry(i, { line: `${i}:` + "é".repeat(150) }));
    assert.ok(batch.reduce((n, e) => n + e.lineBytes, 0) >= 65_536);
    await sink.push(batch);
    assert.deepEqual(
      receiver.lines(),
      batch.map((e) => e.line),
    );
  });
}

const b64 = (s: string): string => Buffer.from(s).toString("base64");

for (const [name, over, expected] of [
  [
    "basic with tenant",
    { tenant_id: "123", auth_token: "tok" },
    { authorization: `Basic ${b64("123:tok")}` },
  ],
  ["basic without tenant", { auth_token: "tok" }, { authorization: `Basic ${b64(":tok")}` }],
  ["tenant only", { tenant_id: "team-a" }, { "x-scope-orgid": "team-a" }],
  ["blank token counts as absent", { tenant_id: "team-a", auth_token: "  " }, { "x-scope-orgid": "team-a" }],
  ["bearer", { auth: "bearer", auth_token: "tok" }, { authorization: "Bearer tok" }],
  [
    "bearer with tenant",
    { auth: "bearer", auth_token: "tok", tenant_id: "t1" },
    { authorization: "Bearer tok", "x-scope-orgid": "t1" },
  ],
  ["nothing", {}, {}],
] as [string, Partial<LokiSinkSettings>, Record<string, string>][]) {
  test(`auth headers: ${name}`, async (t) => {
    const { receiver, sink } = await harness(t, over);
    await sink.push(entries(1));
    const headers = receiver.requests[0]!.headers;
    assert.equal(headers.authorization, expected.authorization);
    assert.equal(headers["x-scope-orgid"], expected["x-scope-orgid"]);
  });
}

test("auth: bearer without a token is a config error", async (t) => {
  await assert.rejects(harness(t, { auth: "bearer" }), { code: "SF2LOKI_CONFIG" });
});

test("keep-alive: many pushes reuse one connection", async (t) => {
  const { receiver, sink } = await harness(t);
  for (let i = 0; i < 20; i++) {
    await sink.push(entries(5, i * 5));
    // undici frees a pooled connection one macrotask after the response ends; a push issued in
    // the same tick would open a second one (the pipeline always yields between batches).
    await new Promise((resolve) => setImmediate(resolve));
  }
  assert.equal(receiver.counts.requests, 20);
  assert.equal(receiver.counts.unique, 100);
  assert.equal(receiver.counts.connections, 1);
});

test("checkpoint-only entries are never sent", async (t) => {
  const { receiver, sink } = await harness(t);
  const { LogEntry } = await import("../../../src/model.ts");
  await sink.push([LogEntry.checkpointOnly({ key: "k", value: "v" }, T0_NS)]);
  assert.equal(receiver.counts.requests, 0);
});

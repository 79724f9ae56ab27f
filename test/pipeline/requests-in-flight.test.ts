// max_in_flight bounds HTTP requests, not batches (#37): an independent receiver (node:http, no sf2loki
// code) timestamps every request's start and end, and the lane's requests open at once never exceed
// the setting, however many streams a batch holds, on the Loki push and on OTLP.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { pino } from "pino";
import { LogEntry } from "../../src/model.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_RECONCILE } from "../../src/pipeline/reconcile.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { LOKI_DEFAULT_LIMITS } from "../../src/sinks/receiving-loki/limits.ts";
import { createLokiSink } from "../../src/sinks/loki/sink.ts";
import { createOtlpSink } from "../../src/sinks/otlp/sink.ts";
import type { Sink } from "../../src/sinks/sink.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { encodeExportResponse } from "../support/otlp-proto.ts";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { listenLoopback } from "../support/loopback.ts";
import { settings as lokiSettings } from "../sinks/loki/support.ts";

const NOW_MS = Date.UTC(2026, 11, 1, 12);
const TOPICS = 6;
const EVENTS = 1800;
/** How long the receiver holds each answer: long enough for a sender that ignores the bound to open more. */
const HOLD_MS = 4;

interface Timeline {
  url: string;
  /** Most requests open at once. */
  peak: number;
  requests: number;
  /** [start, end] of every request, in ms of the receiver's clock. */
  spans: [number, number][];
}

async function timelineReceiver(t: TestContext, wire: "loki" | "otlp"): Promise<Timeline> {
  const timeline: Timeline = { url: "", peak: 0, requests: 0, spans: [] };
  let open = 0;
  const server = createServer((req, res) => {
    const start = performance.now();
    open++;
    timeline.requests++;
    timeline.peak = Math.max(timeline.peak, open);
    req.resume();
    req.on("end", () => {
      setTimeout(() => {
        open--;
        timeline.spans.push([start, performance.now()]);
        if (wire === "loki") res.writeHead(204).end();
        else res.writeHead(200, { "content-type": "application/x-protobuf" }).end(encodeExportResponse());
      }, HOLD_MS);
    });
  });
  const base = await listenLoopback(t, server);
  timeline.url = wire === "loki" ? `${base}/loki/api/v1/push` : `${base}/v1/logs`;
  return timeline;
}

/** Event i: topics in runs of 10, as Pub/Sub topics arrive, one a millisecond. */
function event(i: number): LogEntry {
  const topic = `Topic${Math.floor(i / 10) % TOPICS}`;
  return new LogEntry({
    timestampNs: BigInt(NOW_MS - EVENTS + i) * 1_000_000n,
    labels: { job: "sf2loki", source: "pubsub", event_type: topic },
    line: `{"EventIdentifier":"ev-${i}"}`,
    checkpoint: { key: `pubsub:/event/${topic}`, value: String(i + 1) },
  });
}

function sinkFor(wire: "loki" | "otlp", url: string, clock: ManualClock): Sink {
  const limits = { ...LOKI_DEFAULT_LIMITS, enabled: false };
  return wire === "loki"
    ? createLokiSink(lokiSettings(url, { limits, reconcile: { enabled: false } }), { clock })
    : createOtlpSink(
        {
          url,
          headers: {},
          compression: "gzip",
          service_name: "sf2loki",
          batch: { max_line_bytes: 262_144 },
          limits,
        },
        { clock },
      );
}

for (const wire of ["loki", "otlp"] as const) {
  for (const maxInFlight of [1, 2, 4]) {
    test(`${wire}, max_in_flight ${maxInFlight}: never more requests open at once than that`, async (t) => {
      const timeline = await timelineReceiver(t, wire);
      const clock = new ManualClock({ startMs: NOW_MS, auto: true });
      const sink = sinkFor(wire, timeline.url, clock);
      t.after(() => sink.close());
      const items = Array.from({ length: EVENTS }, (_, i) => event(i));
      await new Pipeline({
        sources: [new ScriptedSource("pubsub", items)],
        sink,
        reconcile: { ...DEFAULT_RECONCILE, enabled: false },
        store: new MemoryStore(),
        batch: {
          ...DEFAULT_BATCH_SETTINGS,
          max_entries: 100,
          flush_interval_ms: 50,
          max_in_flight: maxInFlight,
          max_uncommitted: Math.max(16, maxInFlight),
        },
        clock,
        logger: pino({ level: "silent" }),
      }).run(new AbortController().signal);
      // Every stream's first push goes alone: with 6 topics, the sender had work for more at once.
      assert.ok(timeline.requests > EVENTS / 100, `${timeline.requests} requests`);
      // The receiver's own timeline agrees with its counter: at no instant more than the bound.
      const edges = timeline.spans.flatMap(([s, e]) => [
        [s, 1],
        [e, -1],
      ]);
      edges.sort((a, b) => a[0]! - b[0]! || a[1]! - b[1]!);
      let open = 0;
      let peak = 0;
      for (const [, d] of edges) peak = Math.max(peak, (open += d!));
      assert.ok(timeline.peak <= maxInFlight, `${timeline.peak} requests open at once`);
      assert.ok(peak <= maxInFlight, `${peak} requests open at once on the timeline`);
      if (maxInFlight > 1) assert.ok(timeline.peak > 1, "the lane did use more than one request at once");
    });
  }
}

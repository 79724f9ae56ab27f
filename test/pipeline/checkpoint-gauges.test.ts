import { test } from "node:test";
import assert from "node:assert/strict";
import { ScriptedSource, entry, token } from "../support/fakes.ts";
import { watermarkMs } from "../../src/pipeline/checkpoint-gauges.ts";
import { harness } from "./harness.ts";

test("watermarks are read from the checkpoint's JSON field, bare ISO, or fall back to now", () => {
  const now = 42;
  const iso = "2026-01-02T03:04:05.000Z";
  assert.equal(watermarkMs(JSON.stringify({ ids: ["a"], last_ts: iso }), "last_ts", now), Date.parse(iso));
  assert.equal(watermarkMs(iso, "last_ts", now), Date.parse(iso));
  assert.equal(watermarkMs("{not json", "last_ts", now), now);
  assert.equal(watermarkMs(JSON.stringify({ last_ts: 7 }), "last_ts", now), now);
  assert.equal(watermarkMs("null", "last_ts", now), now);
});

test("commits set replay and watermark gauges by key prefix, org prefix stripped into an attribute", async () => {
  const created = "2026-01-01T10:00:00.000Z";
  const items = [
    token("org=prod-eu:pubsub:/event/LoginEventStream", "AAA="),
    entry("eventlogfile:API", JSON.stringify({ ids: [], last_created: created })),
    token("org=prod-eu:apexlog", JSON.stringify({ ids: [], last_ts: created })),
    token("egress:budget", "{}"),
  ];
  const h = harness([new ScriptedSource("eventlogfile", items)]);
  await h.pipeline.run(new AbortController().signal);
  const replay = await h.points("sf2loki_last_replay_commit_timestamp_seconds");
  assert.deepEqual(
    replay.map((p) => [p.attributes, p.value]),
    [[{ topic: "/event/LoginEventStream", org: "prod-eu" }, h.clock.now() / 1000]],
  );
  const marks = await h.points("sf2loki_watermark_timestamp_seconds");
  assert.deepEqual(
    marks
      .map((p) => [p.attributes, p.value])
      .sort((a, b) => JSON.stringify(a).localeCompare(JSON.stringify(b))),
    [
      [{ source: "apexlog", object: "apexlog", org: "prod-eu" }, Date.parse(created) / 1000],
      [{ source: "eventlogfile", object: "API" }, Date.parse(created) / 1000],
    ],
  );
  const status = h.pipeline.status();
  assert.equal(status.checkpoints["eventlogfile:API"]?.last_commit_ms, h.clock.now());
  assert.equal(status.checkpoints["egress:budget"]?.last_commit_ms, h.clock.now());
});

test("state gauges keep reporting after the write (continuous export)", async () => {
  const h = harness([new ScriptedSource("eventlogfile", [entry("eventlogfile:API", "x")])]);
  await h.pipeline.run(new AbortController().signal);
  for (let i = 0; i < 2; i++) {
    const points = await h.points("sf2loki_last_push_success_timestamp_seconds");
    assert.equal(points.length, 1);
    assert.equal(points[0]!.value, h.clock.now() / 1000);
  }
  assert.equal((await h.points("sf2loki_queue_depth"))[0]?.value, 0);
});

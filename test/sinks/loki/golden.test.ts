// Golden bytes of the Loki request encodings. The digests were recorded from the encoder before the
// hot path was tuned (issue #15); any change to the bytes on the wire, however "equivalent", fails
// here. If a change of the wire format is intended, say so in the commit and record new digests.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { LogEntry, type Labels } from "../../../src/model.ts";
import { encodeRequestSync } from "../../../src/sinks/loki/request.ts";
import { encodePushRequest } from "../../../src/sinks/loki/encode-protobuf.ts";
import { encodeJsonPush } from "../../../src/sinks/loki/encode-json.ts";
import { groupStreams } from "../../../src/sinks/receiving-loki/streams.ts";
import { T0_NS } from "./support.ts";

const sha256 = (b: Buffer): string => createHash("sha256").update(b).digest("hex");

/**
 * A deterministic batch that walks every branch of grouping and encoding: shared and fresh label
 * objects, the same set in another key order, values that need escaping, a third label, empty and
 * non-ASCII lines and metadata, unsorted metadata, zero seconds, zero nanos, pre-1970 instants.
 */
function goldenBatch(): LogEntry[] {
  const shared: Labels = { source: "pubsub", event_type: "LoginEventStream" };
  const labelSets: (() => Labels)[] = [
    () => shared,
    () => ({ source: "pubsub", event_type: "LoginEventStream" }),
    () => ({ event_type: "LoginEventStream", source: "pubsub" }),
    () => ({ source: "eventlog_objects", event_type: "ApiEvent" }),
    () => ({ source: "apexlog", event_type: 'q"uo\\te\nd', org: "acme" }),
    () => ({ org: "acme", event_type: "ApiEvent", source: "eventlog_objects" }),
  ];
  const metas: ((i: number) => Labels)[] = [
    (i) => ({ level: "info", user_id: `005${i}` }),
    (i) => ({ user_id: `005${i}`, level: "warn" }),
    () => ({}),
    (i) => ({ z: "ü€😀", a: "", m: "x".repeat(40 + (i % 50)) }),
    (i) => ({ ["k" + String(i % 3)]: "v" }),
  ];
  const lines: ((i: number) => string)[] = [
    (i) => `{"EventIdentifier":"ev-${i}","n":${i}}`,
    () => "",
    (i) => "é".repeat(i % 90) + "😀",
    (i) => "a".repeat(i % 300),
    (i) => JSON.stringify({ i, text: 'line with "quotes" and \n newline' }),
  ];
  const stamps: ((i: number) => bigint)[] = [
    (i) => T0_NS + BigInt(i) * 1_000_123n,
    (i) => BigInt(i) * 1_000_000_000n, // whole seconds: nanos 0
    (i) => BigInt(i % 1000), // seconds 0
    (i) => -1_500_000_000n - BigInt(i) * 7n, // before the epoch
    (i) => T0_NS + BigInt(i) * 987_654_321n,
  ];
  const out: LogEntry[] = [];
  for (let i = 0; i < 700; i++) {
    out.push(
      new LogEntry({
        timestampNs: stamps[(i * 7) % stamps.length]!(i),
        labels: labelSets[(i >> 2) % labelSets.length]!(),
        line: lines[(i * 3) % lines.length]!(i),
        structuredMetadata: metas[i % metas.length]!(i),
        checkpoint: { key: "golden", value: String(i) },
      }),
    );
  }
  return out;
}

const GOLDEN = {
  protobuf: "1b65621e0fc38d31ab5546cc392b178f701c4c4a7b2fd36d7cc58b33dc29ac57",
  protobufSnappy: "af9be7ad587fa23b32f90c085b6dd0ad5476ab51ad6613a68c661b7c549409f5",
  json: "1c8ddd1a5840fba6ef3861b678bfd7c3b4a0c644917c9a41a93bb3f8da58d7b1",
};

test("protobuf request bytes match the recorded golden digest", () => {
  const streams = groupStreams(goldenBatch());
  // Three spellings of one set, a second set, the escaped apexlog set, the set with org: 4 streams.
  assert.deepEqual(
    streams.map((s) => [s.labels, s.entries.length]),
    [
      ['{event_type="LoginEventStream",source="pubsub"}', 352],
      ['{event_type="ApiEvent",source="eventlog_objects"}', 116],
      ['{event_type="q\\"uo\\\\te\\nd",org="acme",source="apexlog"}', 116],
      ['{event_type="ApiEvent",org="acme",source="eventlog_objects"}', 116],
    ],
  );
  const raw = encodePushRequest(streams);
  assert.equal(sha256(raw), GOLDEN.protobuf);
});

test("protobuf+snappy request body matches the recorded golden digest", () => {
  const { body } = encodeRequestSync(goldenBatch(), "protobuf-snappy");
  assert.equal(sha256(body), GOLDEN.protobufSnappy);
});

test("json request body matches the recorded golden digest", () => {
  assert.equal(sha256(encodeJsonPush(groupStreams(goldenBatch()))), GOLDEN.json);
  assert.equal(sha256(encodeRequestSync(goldenBatch(), "json").body), GOLDEN.json);
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import protobuf from "protobufjs";
import snappy from "snappy";
import { LogEntry } from "../../../src/model.ts";
import { groupStreams } from "../../../src/sinks/receiving-loki/streams.ts";
import { encodePushRequest } from "../../../src/sinks/loki/encode-protobuf.ts";
import { encodeJsonPush } from "../../../src/sinks/loki/encode-json.ts";
import { encodeRequest, encodeRequestSync } from "../../../src/sinks/loki/request.ts";
import type { WireFormat } from "../../../src/sinks/loki/settings.ts";
import { T0_NS, entry } from "./support.ts";

const PushRequest = protobuf
  .loadSync(fileURLToPath(new URL("../../../proto/loki_push.proto", import.meta.url)))
  .lookupType("logproto.PushRequest");

interface Decoded {
  streams: {
    labels: string;
    entries: {
      timestamp: { seconds: string; nanos: number };
      line: string;
      structuredMetadata: { name: string; value: string }[];
    }[];
  }[];
}

function decode(buf: Buffer): Decoded {
  return PushRequest.toObject(PushRequest.decode(buf), { longs: String, defaults: true }) as Decoded;
}

test("protobuf: an independent decoder reads streams, ns timestamps, lines and sorted metadata", () => {
  const a = { source: "pubsub", event_type: "Login" };
  const b = { event_type: "Api", source: "eventlog_objects" };
  const batch = [
    entry(0, { labels: a, ts: T0_NS + 123_456_789n, line: "first ü€😀", meta: { z: "1", a: "2", m: "é" } }),
    entry(1, { labels: b, ts: T0_NS + 1n, line: "" }),
    // Same label set as the first, built in another key order: same stream.
    entry(2, {
      labels: { event_type: "Login", source: "pubsub" },
      ts: T0_NS,
      line: "x".repeat(300),
      meta: {},
    }),
    // Before the epoch: Timestamp nanos stay non-negative.
    entry(3, { labels: b, ts: -1_500_000_000n, line: "old" }),
  ];
  const msg = decode(encodePushRequest(groupStreams(batch)));
  assert.deepEqual(
    msg.streams.map((s) => s.labels),
    ['{event_type="Login",source="pubsub"}', '{event_type="Api",source="eventlog_objects"}'],
  );
  const [s0, s1] = msg.streams;
  assert.deepEqual(
    s0!.entries.map((e) => [e.timestamp.seconds, e.timestamp.nanos, e.line]),
    [
      [String(T0_NS / 1_000_000_000n), 123_456_789, "first ü€😀"],
      [String(T0_NS / 1_000_000_000n), 0, "x".repeat(300)],
    ],
  );
  assert.deepEqual(s0!.entries[0]!.structuredMetadata, [
    { name: "a", value: "2" },
    { name: "m", value: "é" },
    { name: "z", value: "1" },
  ]);
  assert.deepEqual(
    s1!.entries.map((e) => [e.timestamp.seconds, e.timestamp.nanos, e.line]),
    [
      [String(T0_NS / 1_000_000_000n), 1, ""],
      ["-2", 500_000_000, "old"],
    ],
  );
});

test("protobuf: large and varied batches round-trip exactly", () => {
  const batch: LogEntry[] = [];
  for (let i = 0; i < 2000; i++) {
    batch.push(
      entry(i, {
        labels: { source: "s", event_type: `t${i % 7}` },
        ts: T0_NS + BigInt(i) * 987_654_321n,
        line: (i % 3 === 0 ? "é" : "a").repeat(i % 400),
        meta: { level: i % 2 ? "info" : "warn", ["k" + String(i % 5)]: "v".repeat(i % 130) },
      }),
    );
  }
  const msg = decode(encodePushRequest(groupStreams(batch)));
  const got = msg.streams.flatMap((s) =>
    s.entries.map((e) => ({
      labels: s.labels,
      ns: BigInt(e.timestamp.seconds) * 1_000_000_000n + BigInt(e.timestamp.nanos),
      line: e.line,
      meta: Object.fromEntries(e.structuredMetadata.map((p) => [p.name, p.value])),
    })),
  );
  assert.equal(got.length, batch.length);
  const byLine = new Map(got.map((g) => [`${g.ns}`, g]));
  for (const e of batch) {
    const g = byLine.get(`${e.timestampNs}`);
    assert.ok(g, `entry at ${e.timestampNs} missing`);
    assert.equal(g.line, e.line);
    assert.deepEqual(g.meta, e.structuredMetadata);
    assert.equal(g.labels, `{event_type="${e.labels.event_type}",source="s"}`);
  }
});

test("json: exact body with integer-ns strings, sorted labels and metadata, {} when empty", () => {
  const batch = [
    entry(0, {
      labels: { source: "p", event_type: "L" },
      ts: 1_700_000_000_123_456_789n,
      line: 'he said "hi"\n',
      meta: { b: "2", a: "1" },
    }),
    entry(1, { labels: { source: "p", event_type: "L" }, ts: 5n, line: "€", meta: {} }),
  ];
  assert.equal(
    encodeJsonPush(groupStreams(batch)).toString("utf8"),
    '{"streams":[{"stream":{"event_type":"L","source":"p"},"values":[' +
      '["1700000000123456789","he said \\"hi\\"\\n",{"a":"1","b":"2"}],["5","€",{}]]}]}',
  );
});

for (const format of ["protobuf-snappy", "json", "json-gzip"] as WireFormat[]) {
  test(`${format}: a large batch encodes byte-identically whichever path encodeRequest takes`, async () => {
    const big = Array.from({ length: 400 }, (_, i) => entry(i, { line: `${i} `.repeat(120) }));
    const lineBytes = big.reduce((s, e) => s + e.lineBytes, 0);
    const offloadAt = 65_536; // OFFLOAD_LINE_BYTES is 1 MiB: a lower threshold keeps the test small
    assert.ok(lineBytes >= offloadAt, "the batch must cross the offload threshold");
    const sync = encodeRequestSync(big, format);
    const offloaded = await encodeRequest(big, format, offloadAt);
    assert.ok(sync.body.equals(offloaded.body));
    assert.deepEqual(offloaded.headers, sync.headers);
    const raw =
      format === "protobuf-snappy"
        ? (snappy.uncompressSync(offloaded.body, { asBuffer: true }) as Buffer)
        : format === "json-gzip"
          ? gunzipSync(offloaded.body)
          : offloaded.body;
    const expected =
      format === "protobuf-snappy" ? encodePushRequest(groupStreams(big)) : encodeJsonPush(groupStreams(big));
    assert.ok(raw.equals(expected));
  });
}

test("protobuf-snappy: bodies encoded one after another through the reused scratch stay intact", () => {
  // Growing sizes walk the scratch through its growth steps and past its 4 MiB cap.
  const sizes = [10, 3000, 200, 16_000, 5];
  const made = sizes.map((n, b) =>
    Array.from({ length: n }, (_, i) => entry(i, { line: `batch ${b} entry ${i} `.repeat(12) })),
  );
  const bodies = made.map((batch) => encodeRequestSync(batch, "protobuf-snappy").body);
  assert.ok(
    encodePushRequest(groupStreams(made[3]!)).length > 4 * 1_048_576,
    "one batch must be larger than the scratch cap",
  );
  made.forEach((batch, b) => {
    const raw = snappy.uncompressSync(bodies[b]!, { asBuffer: true }) as Buffer;
    assert.ok(raw.equals(encodePushRequest(groupStreams(batch))), `body ${b} changed after later encodes`);
  });
});

test("protobuf: batches of every size in a row decode exactly (the sizing scratch is reused and grown)", () => {
  const batchOf = (n: number, metaFields: number, tag: string) =>
    Array.from({ length: n }, (_, i) =>
      entry(i, {
        labels: { source: "pubsub", event_type: i % 3 === 0 ? "Login" : "Api" },
        ts: T0_NS + BigInt(i),
        line: `${tag}-${i}`,
        meta: Object.fromEntries(Array.from({ length: metaFields }, (_, k) => [`f${k}`, `${tag}${i}.${k}`])),
      }),
    );
  // Small, then larger than the initial scratch (1024 entries, 9216 metadata slots), then small again.
  for (const [n, fields, tag] of [
    [3, 1, "a"],
    [2500, 5, "b"],
    [4, 0, "c"],
    [1, 7, "d"],
  ] as const) {
    const batch = batchOf(n, fields, tag);
    const msg = decode(encodePushRequest(groupStreams(batch)));
    const got = msg.streams.flatMap((s) =>
      s.entries.map((e) => `${e.line}|${e.structuredMetadata.map((p) => `${p.name}=${p.value}`).join(",")}`),
    );
    const want = groupStreams(batch).flatMap((s) =>
      s.entries.map(
        (e) =>
          `${e.line}|${Object.keys(e.structuredMetadata)
            .sort()
            .map((k) => `${k}=${e.structuredMetadata[k]}`)
            .join(",")}`,
      ),
    );
    assert.deepEqual(got, want, `batch ${tag} of ${n}`);
  }
});

test("streams: a batch sharing one label object is one stream of the batch itself; equal copies group alike", () => {
  const shared = { source: "eventlogfile", event_type: "API" };
  const one = [0, 1, 2].map((i) => entry(i, { labels: shared }));
  const [only, ...rest] = groupStreams(one);
  assert.equal(rest.length, 0);
  assert.equal(only!.entries, one);
  assert.equal(only!.labels, '{event_type="API",source="eventlogfile"}');
  // The same sets as copies, and a second set between them: grouped by content, order kept.
  const mixed = [
    entry(0, { labels: { ...shared } }),
    entry(1, { labels: { source: "pubsub", event_type: "Login" } }),
    entry(2, { labels: { event_type: "API", source: "eventlogfile" } }),
  ];
  assert.deepEqual(
    groupStreams(mixed).map((g) => [g.labels, g.entries.map((e) => e.checkpoint.value)]),
    [
      ['{event_type="API",source="eventlogfile"}', ["0", "2"]],
      ['{event_type="Login",source="pubsub"}', ["1"]],
    ],
  );
});

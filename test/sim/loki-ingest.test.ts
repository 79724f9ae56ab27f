// The receiver's validation skips measuring what the wire sizes already clear (DecodedEntry's bounds);
// these cases sit on each limit and require the verdict the fully materialised protobufjs decode
// gets, entry by entry and word for word.
import { test } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { decodePushRequest } from "../../src/sim/loki-decode-fast.ts";
import { decodePushRequestReference } from "../../src/sim/loki-decode-reference.ts";
import type { DecodedStream } from "../../src/sim/loki-decoded.ts";
import { defaultIngestLimits, ingest, type IngestLimits } from "../../src/sim/loki-ingest.ts";
import { AcceptedStore } from "../../src/sim/loki-store.ts";

const NOW_MS = 1_767_225_600_000;

function limits(over: Partial<IngestLimits> = {}): IngestLimits {
  return { ...defaultIngestLimits(NOW_MS), ...over };
}

type Pair = [string | Buffer, string | Buffer];

interface Spec {
  line: string | Buffer;
  pairs?: Pair[];
  sec?: number;
}

/** One stream `{job="t"}` of entries, metadata pairs written as given (duplicates and raw bytes kept). */
function push(entries: Spec[]): Buffer {
  const w = protobuf.Writer.create();
  w.uint32(0x0a).fork();
  w.uint32(0x0a).string('{job="t"}');
  entries.forEach((e, i) => {
    w.uint32(0x12).fork();
    w.uint32(0x0a)
      .fork()
      .uint32(0x08)
      .int64(e.sec ?? NOW_MS / 1000 - 60 + i)
      .ldelim();
    if (typeof e.line === "string") w.uint32(0x12).string(e.line);
    else w.uint32(0x12).bytes(e.line);
    for (const [name, value] of e.pairs ?? []) {
      w.uint32(0x1a).fork();
      if (typeof name === "string") w.uint32(0x0a).string(name);
      else w.uint32(0x0a).bytes(name);
      if (typeof value === "string") w.uint32(0x12).string(value);
      else w.uint32(0x12).bytes(value);
      w.ldelim();
    }
    w.ldelim();
  });
  w.ldelim();
  return Buffer.from(w.finish());
}

function run(streams: DecodedStream[], l: IngestLimits): unknown {
  const store = new AcceptedStore("all");
  const result = ingest(streams, store, l);
  return { result, kept: store.entries().map((e) => [e.timestampNs, e.line, Object.entries(e.metadata)]) };
}

/** Ingest of the fast decode equals ingest of the protobufjs decode; returns the result. */
function same(
  body: Buffer,
  l: IngestLimits,
  why: string,
): { status: number; accepted: number; body: string } {
  const ours = run(decodePushRequest(body), l) as {
    result: { status: number; accepted: number; body: string };
  };
  assert.deepEqual(ours, run(decodePushRequestReference(body), l), why);
  return ours.result;
}

test("line limit: at, over and multi-byte lines get the reference's verdict", () => {
  const body = push([
    { line: "x".repeat(20) },
    { line: "x".repeat(21) },
    { line: "€".repeat(6) }, // 18 bytes
    { line: "€".repeat(7) }, // 21 bytes
    { line: "😀".repeat(5) }, // 20 bytes
    { line: "é".repeat(15) }, // 30 bytes
    { line: "" },
  ]);
  const r = same(body, limits({ maxLineBytes: 20 }), "max 20");
  assert.equal(r.status, 400);
  assert.equal(r.accepted, 4);
  assert.match(r.body, /length '21' bytes/);
  assert.match(r.body, /length '30' bytes/);
  assert.equal(same(body, limits({ maxLineBytes: 0 }), "no limit").accepted, 7);
  assert.equal(same(body, limits({ maxLineBytes: 30 }), "max 30").accepted, 7);
  assert.equal(same(body, limits({ maxLineBytes: 29 }), "max 29").accepted, 6);
});

test("metadata limits: bytes and counts at and over the limit, duplicates, multi-byte names", () => {
  const dup: Pair[] = [
    ["a", "1"],
    ["a", "2"],
    ["a", "3"],
  ];
  const body = push([
    {
      line: "two pairs",
      pairs: [
        ["ab", "cd"],
        ["ef", "gh"],
      ],
    }, // 8 bytes, 2 names
    {
      line: "three names",
      pairs: [
        ["a", "1"],
        ["b", "2"],
        ["c", "3"],
      ],
    }, // 6 bytes, 3 names
    { line: "one name thrice", pairs: dup }, // 2 bytes and 1 name once merged
    { line: "non-ASCII", pairs: [["é", "€€"]] }, // 8 bytes
    { line: "wide", pairs: [["😀", "€".repeat(10)]] }, // 34 bytes
    { line: "none" },
  ]);
  const strict = same(
    body,
    limits({ maxStructuredMetadataBytes: 8, maxStructuredMetadataEntries: 2 }),
    "8 B, 2",
  );
  assert.equal(strict.status, 400);
  assert.equal(strict.accepted, 4);
  assert.match(strict.body, /too many structured metadata labels: '3', limit: '2'/);
  assert.match(strict.body, /structured metadata too large: '34' bytes, limit: '8'/);
  assert.equal(same(body, limits({ maxStructuredMetadataBytes: 7 }), "7 B").accepted, 3);
  assert.equal(same(body, limits({ maxStructuredMetadataEntries: 1 }), "1 name").accepted, 4);
  assert.equal(
    same(body, limits({ maxStructuredMetadataBytes: 0, maxStructuredMetadataEntries: 0 }), "off").accepted,
    6,
  );
  assert.equal(same(body, limits({ maxStructuredMetadataBytes: 34 }), "34 B").accepted, 6);
});

test("age limits, the poison rule and the out-of-order window read the lazily built fields", () => {
  const body = push([
    { line: "new", sec: NOW_MS / 1000 },
    { line: "old", sec: NOW_MS / 1000 - 7200 },
    { line: "future", sec: NOW_MS / 1000 + 7200 },
    { line: "has POISON inside" },
    { line: "older than the window", sec: NOW_MS / 1000 - 600 },
  ]);
  const r = same(
    body,
    limits({
      rejectOldSamplesMaxAgeMs: 3_600_000,
      creationGracePeriodMs: 600_000,
      poison: { marker: "POISON", status: 400 },
    }),
    "age and poison",
  );
  assert.equal(r.accepted, 2);
  assert.match(r.body, /POISON/);
  const store = new AcceptedStore("counts", { trackNewest: true });
  const res = ingest(decodePushRequest(body), store, limits({ outOfOrderWindowMs: 60_000 }));
  assert.deepEqual([res.accepted, res.rejected], [2, 3]);
  assert.throws(
    () => new AcceptedStore("counts", { trackNewest: false }).maxTimestamp({ job: "t" }),
    /trackNewest/,
  );
});

// The simulated Loki's hand-written protobuf decoder against protobufjs, the independent reference:
// the same bytes must give the same streams, and a malformed body must be refused by both. Where the
// two part ways on purpose (a known field with the wrong wire type, an unknown varint longer than 10
// bytes: Loki's decoder refuses them, protobufjs skips them), the test says so.
import { test } from "node:test";
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { LogEntry, type Labels } from "../../src/model.ts";
import { groupStreams } from "../../src/sinks/receiving-loki/streams.ts";
import { encodePushRequest } from "../../src/sinks/loki/encode-protobuf.ts";
import { decodePushRequest } from "../../src/sim/loki-decode-fast.ts";
import { decodePushRequestReference } from "../../src/sim/loki-decode-reference.ts";
import { BodyDecodeError, type DecodedStream } from "../../src/sim/loki-decoded.ts";

/** Plain data for deepEqual: metadata as its [name, value] pairs in order (own keys, "__proto__" too). */
function plain(streams: DecodedStream[]): unknown {
  return streams.map((s) => ({
    labels: s.labels,
    entries: s.entries.map((e) => ({
      timestampNs: e.timestampNs,
      line: e.line,
      metadata: Object.entries(e.metadata),
    })),
  }));
}

function agree(body: Buffer, why: string): DecodedStream[] {
  const ours = decodePushRequest(body);
  assert.deepEqual(plain(ours), plain(decodePushRequestReference(body)), why);
  return ours;
}

/** Both refuse with a 400 BodyDecodeError; ours names what is wrong. */
function bothRefuse(body: Buffer, ours: RegExp, why: string): void {
  assert.throws(() => decodePushRequestReference(body), BodyDecodeError, `protobufjs accepted: ${why}`);
  assert.throws(
    () => decodePushRequest(body),
    (err: unknown) => {
      assert.ok(err instanceof BodyDecodeError, why);
      assert.equal(err.status, 400, why);
      assert.match(err.message, ours, why);
      assert.match(err.message, /at byte \d+ of \d+; the body is not a valid logproto\.PushRequest/, why);
      return true;
    },
    why,
  );
}

let seq = 0;
function logEntry(ts: bigint, line: string, labels: Labels, meta: Labels = {}): LogEntry {
  return new LogEntry({
    timestampNs: ts,
    labels,
    line,
    structuredMetadata: meta,
    checkpoint: { key: "k", value: String(seq++) },
  });
}

const T0 = 1_767_225_600_000_000_000n;
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);

test("sink-encoded batches decode exactly as protobufjs decodes them", () => {
  const a = { source: "pubsub", event_type: "LoginEventStream" };
  const b = { source: "eventlog_objects", event_type: "ApiEvent", org: "prod-ü" };
  const c = { job: "x".repeat(300) };
  const stamps = [
    T0,
    T0 + 1n,
    T0 + 999_999_999n,
    0n,
    1n,
    -1n, // just before 1970: seconds -1, nanos 999999999
    -1_500_000_000n,
    -9_000_000_000_000_000_000n, // year 1684
    INT64_MIN,
    INT64_MAX, // 2262
    4_102_444_800_000_000_000n, // 2100
  ];
  const lines = [
    '{"EventIdentifier":"e1","n":1}',
    "",
    "ü€😀 naïve 日本語",
    "x".repeat(70_000), // a length varint of three bytes
    "line\nwith\u0000control\tchars",
    "\uD83D", // a lone surrogate: the sink writes U+FFFD's bytes
  ];
  const metas: Labels[] = [
    {},
    { level: "info", user_id: "005000000000001" },
    { z: "1", a: "2", m: "é" },
    { empty: "" },
    { "": "unnamed" },
    { long: "v".repeat(200), trace_id: "ab".repeat(16) },
  ];
  const labelSets = [a, b, c];
  const batch: LogEntry[] = [];
  for (let i = 0; i < 300; i++) {
    batch.push(
      logEntry(
        stamps[i % stamps.length]!,
        lines[(i * 7) % lines.length]!,
        labelSets[(i * 5) % labelSets.length]!,
        metas[(i * 3) % metas.length],
      ),
    );
  }
  const streams = agree(encodePushRequest(groupStreams(batch)), "mixed batch");
  assert.equal(streams.length, 3);
  assert.equal(
    streams.reduce((n, s) => n + s.entries.length, 0),
    300,
  );
  // Spot checks against what was sent, so agreement is not agreement on nothing.
  const first = streams[0]!.entries[0]!;
  assert.equal(first.timestampNs, T0);
  assert.equal(first.line, lines[0]);
  assert.deepEqual({ ...first.metadata }, {});
  const sent = new Set(batch.map((e) => e.timestampNs));
  for (const s of streams) for (const e of s.entries) assert.ok(sent.has(e.timestampNs), `${e.timestampNs}`);

  agree(encodePushRequest(groupStreams([])), "no streams");
  agree(encodePushRequest(groupStreams([logEntry(0n, "", {})])), "all-default entry in an empty label set");
});

/** A hand-built body: protobufjs's Writer as a byte writer (tags, varints, lengths), not as a schema. */
function body(build: (w: protobuf.Writer) => void): Buffer {
  const w = protobuf.Writer.create();
  build(w);
  return Buffer.from(w.finish());
}

const tag = (field: number, wire: number): number => (field << 3) | wire;

/** A length-delimited field whose content `inner` writes. */
function sub(w: protobuf.Writer, field: number, inner: (w: protobuf.Writer) => void): void {
  w.uint32(tag(field, 2)).fork();
  inner(w);
  w.ldelim();
}

/** One unknown field of each wire type, groups nested, numbered from `from`. */
function unknowns(w: protobuf.Writer, from: number): void {
  w.uint32(tag(from, 0)).uint64(2 ** 60);
  w.uint32(tag(from + 1, 1)).fixed64(12345);
  w.uint32(tag(from + 2, 2)).bytes(Buffer.from([1, 2, 3, 0xff]));
  w.uint32(tag(from + 3, 5)).fixed32(7);
  w.uint32(tag(from + 4, 3));
  w.uint32(tag(1, 0)).uint32(1);
  w.uint32(tag(2, 3)).uint32(tag(1, 2)).string("in a nested group").uint32(tag(2, 4));
  w.uint32(tag(from + 4, 4));
  w.uint32(tag(1000, 2)).string("a large field number");
}

test("hand-built bodies: unknown fields, merged and repeated fields, edge values", () => {
  const streams = agree(
    body((w) => {
      unknowns(w, 2);
      sub(w, 1, (s) => {
        unknowns(s, 4);
        s.uint32(tag(1, 2)).string('{job="first"}');
        s.uint32(tag(3, 0)).uint64(987654321); // StreamAdapter.hash: known, ignored
        s.uint32(tag(1, 2)).string('{job="last wins"}');
        sub(s, 2, (e) => {
          unknowns(e, 4);
          // Two Timestamp fields merge: seconds from the first, nanos from the second.
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64(1_700_000_000).uint32(tag(2, 0)).int32(5));
          sub(e, 1, (t) => {
            unknowns(t, 3);
            t.uint32(tag(2, 0)).int32(42);
          });
          e.uint32(tag(2, 2)).string("replaced");
          e.uint32(tag(2, 2)).string("the line ü");
          sub(e, 3, (p) => p.uint32(tag(1, 2)).string("dup").uint32(tag(2, 2)).string("first"));
          sub(e, 3, (p) => p.uint32(tag(1, 2)).string("__proto__").uint32(tag(2, 2)).string("own key"));
          sub(e, 3, (p) => p.uint32(tag(2, 2)).string("no name"));
          sub(e, 3, (p) => {
            unknowns(p, 3);
            p.uint32(tag(1, 2)).string("no value");
          });
          sub(e, 3, (p) => p.uint32(tag(1, 2)).string("dup").uint32(tag(2, 2)).string("second"));
        });
        // Negative nanos (int32 as a 10-byte varint), and seconds beyond ±2^53.
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64(-5).uint32(tag(2, 0)).int32(-3));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64("9223372036854775807"));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64("-9223372036854775808"));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64(2 ** 53 - 1));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64(-(2 ** 53) - 2));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64("9007199254740993"));
        }); // 2^53 + 1
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(1, 0)).int64("-9007199254740995"));
        });
        sub(s, 2, (e) => {
          sub(e, 1, (t) => t.uint32(tag(2, 0)).uint32(2 ** 32 - 1));
        }); // nanos read as int32: -1
        sub(s, 2, () => undefined); // an empty entry
      });
      sub(w, 1, () => undefined); // an empty stream
    }),
    "hand-built",
  );
  const [s0, s1] = streams;
  assert.equal(s0!.labels, '{job="last wins"}');
  const e0 = s0!.entries[0]!;
  assert.equal(e0.timestampNs, 1_700_000_000_000_000_042n);
  assert.equal(e0.line, "the line ü");
  assert.deepEqual(Object.entries(e0.metadata), [
    ["dup", "second"],
    ["__proto__", "own key"],
    ["", "no name"],
    ["no value", ""],
  ]);
  assert.equal(Object.getPrototypeOf(e0.metadata), Object.prototype);
  assert.equal(s0!.entries[1]!.timestampNs, -5_000_000_003n);
  assert.equal(s0!.entries[2]!.timestampNs, INT64_MAX * 1_000_000_000n);
  assert.equal(s0!.entries[3]!.timestampNs, INT64_MIN * 1_000_000_000n);
  assert.equal(s0!.entries[6]!.timestampNs, 9_007_199_254_740_993_000_000_000n);
  assert.equal(s0!.entries[8]!.timestampNs, -1n);
  assert.deepEqual(plain([s1!]), [{ labels: "", entries: [] }]);
});

test("truncated and overrunning bodies are refused by both decoders", () => {
  const good = encodePushRequest(
    groupStreams([logEntry(T0, "a line", { job: "a" }, { k: "v" }), logEntry(T0 + 1n, "two", { job: "a" })]),
  );
  agree(good, "the uncut body");
  // Every proper prefix of a body cuts some field short.
  for (let cut = 1; cut < good.length; cut++) {
    const prefix = good.subarray(0, cut);
    bothRefuse(
      prefix,
      /truncated varint|runs past the end of its message/,
      `cut at ${cut} of ${good.length}`,
    );
  }
  bothRefuse(
    Buffer.from([0x0a, 0x80]),
    /truncated varint \(PushRequest\.streams length\)/,
    "length varint cut",
  );
  bothRefuse(Buffer.from([0x10]), /truncated varint \(unknown field 2\)/, "value varint cut");
  bothRefuse(
    body((w) => w.uint32(tag(5, 0)).uint64(300)).subarray(0, 2),
    /truncated varint \(unknown field 5\)/,
    "unknown varint cut",
  );
  bothRefuse(
    Buffer.from([0x0a, 0x05, 0x0a, 0x01]),
    /runs past the end of its message/,
    "length past the end",
  );
  // A field whose length fits the body but not its enclosing message.
  bothRefuse(
    Buffer.from([0x0a, 0x02, 0x0a, 0x05, 0x61, 0x62, 0x63, 0x64, 0x65]),
    /StreamAdapter\.labels of 5 bytes runs past the end of its message \(0 left\)/,
    "length past the enclosing message",
  );
  bothRefuse(Buffer.from([0x11, 1, 2, 3]), /truncated fixed64/, "fixed64 cut");
  bothRefuse(Buffer.from([0x15, 1, 2]), /truncated fixed32/, "fixed32 cut");
  bothRefuse(Buffer.from([0x00, 0x00]), /field number 0 in a tag/, "field 0");
  bothRefuse(Buffer.from([0x0e]), /invalid wire type 6/, "wire type 6");
  bothRefuse(Buffer.from([0x0f]), /invalid wire type 7/, "wire type 7");
  bothRefuse(Buffer.from([0x13, 0x08, 0x01]), /group 2 has no end/, "unterminated group");
  bothRefuse(Buffer.from([0x13, 0x1c]), /group 2 ended by 3/, "mismatched group end");
});

test("strings that are not UTF-8 are refused by both, wherever they are; a BOM is kept", () => {
  const bad: [string, Buffer][] = [
    ["lone continuation", Buffer.from([0x61, 0x80])],
    ["truncated sequence", Buffer.from([0xe2, 0x82])],
    ["overlong", Buffer.from([0xc0, 0x80])],
    ["surrogate", Buffer.from([0xed, 0xa0, 0x80])],
    ["beyond U+10FFFF", Buffer.from([0xf4, 0x90, 0x80, 0x80])],
    [
      "0xff in a long ASCII run",
      Buffer.concat([Buffer.alloc(70, 0x61), Buffer.from([0xff]), Buffer.alloc(9, 0x62)]),
    ],
    [
      "a cut sequence at the end of a long run",
      Buffer.concat([Buffer.alloc(40, 0x61), Buffer.from([0xf0, 0x9f])]),
    ],
  ];
  const where: [string, (w: protobuf.Writer, bytes: Buffer) => void][] = [
    [
      "StreamAdapter.labels",
      (w, b) => {
        sub(w, 1, (s) => s.uint32(tag(1, 2)).bytes(b));
      },
    ],
    [
      "EntryAdapter.line",
      (w, b) => {
        sub(w, 1, (s) => {
          sub(s, 2, (e) => e.uint32(tag(2, 2)).bytes(b));
        });
      },
    ],
    [
      "LabelPairAdapter.name",
      (w, b) => {
        sub(w, 1, (s) => {
          sub(s, 2, (e) => {
            sub(e, 3, (p) => p.uint32(tag(1, 2)).bytes(b));
          });
        });
      },
    ],
    [
      "LabelPairAdapter.value",
      (w, b) => {
        sub(w, 1, (s) => {
          sub(s, 2, (e) => {
            sub(e, 3, (p) => p.uint32(tag(2, 2)).bytes(b));
          });
        });
      },
    ],
  ];
  for (const [field, write] of where) {
    for (const [kind, bytes] of bad) {
      bothRefuse(
        body((w) => {
          write(w, bytes);
        }),
        new RegExp(`${field.replace(".", "\\.")} is not valid UTF-8`),
        `${kind} in ${field}`,
      );
    }
    const fine = Buffer.from("\uFEFFbom, é€😀 and " + "ascii ".repeat(20));
    const [stream] = agree(
      body((w) => {
        write(w, fine);
      }),
      `valid UTF-8 in ${field}`,
    );
    assert.ok(stream, field);
  }
  // A string field of an unknown number is bytes: not checked by either.
  agree(
    body((w) => w.uint32(tag(9, 2)).bytes(Buffer.from([0xff]))),
    "unknown bytes",
  );
});

test("what Loki refuses and protobufjs skips: a known field of the wrong wire type, an 11-byte varint", () => {
  const cases: [Buffer, RegExp, string][] = [
    [
      body((w) => w.uint32(tag(1, 0)).uint32(5)),
      /PushRequest\.streams has wire type 0, expected 2/,
      "streams",
    ],
    [
      body((w) => {
        sub(w, 1, (s) => s.uint32(tag(1, 0)).uint32(5));
      }),
      /StreamAdapter\.labels has wire type 0/,
      "labels",
    ],
    [
      body((w) => {
        sub(w, 1, (s) => s.uint32(tag(3, 2)).string("x"));
      }),
      /StreamAdapter\.hash has wire type 2/,
      "hash",
    ],
    [
      body((w) => {
        sub(w, 1, (s) => {
          sub(s, 2, (e) => e.uint32(tag(2, 5)).fixed32(1));
        });
      }),
      /EntryAdapter\.line has wire type 5/,
      "line",
    ],
    [
      body((w) => {
        sub(w, 1, (s) => {
          sub(s, 2, (e) => {
            sub(e, 1, (t) => t.uint32(tag(1, 1)).fixed64(1));
          });
        });
      }),
      /Timestamp\.seconds has wire type 1/,
      "seconds",
    ],
    // protobufjs skips an unknown varint of any length; Loki's decoder stops at 10 bytes.
    [
      Buffer.from([0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]),
      /varint longer than 10 bytes \(unknown field 2\)/,
      "11-byte varint",
    ],
  ];
  for (const [bytes, message, why] of cases) {
    assert.doesNotThrow(() => decodePushRequestReference(bytes), why);
    assert.throws(() => decodePushRequest(bytes), message, why);
  }
});

test("interned metadata strings: thousands of distinct short values, collisions included, read twice", () => {
  const batch = Array.from({ length: 9000 }, (_, i) =>
    logEntry(
      T0 + BigInt(i),
      `l${i}`,
      { job: "a" },
      { level: i % 3 === 0 ? "info" : "warn", user_id: `u${i % 6000}` },
    ),
  );
  const raw = encodePushRequest(groupStreams(batch));
  agree(raw, "first read");
  const [stream] = agree(raw, "second read, from the table");
  assert.equal(stream!.entries[8999]!.metadata.user_id, "u2999");
});

test("groups nested past the depth bound are refused (protobufjs allows deeper, up to its own bound)", () => {
  const deep = (n: number): Buffer => Buffer.concat([Buffer.alloc(n, tag(2, 3)), Buffer.alloc(n, tag(2, 4))]);
  agree(deep(50), "50 nested groups");
  assert.throws(() => decodePushRequest(deep(101)), /groups nested deeper than 100/);
});

test("the BigInt timestamp is built on first read and kept", () => {
  const [stream] = decodePushRequest(encodePushRequest(groupStreams([logEntry(T0 + 5n, "x", { job: "a" })])));
  const e = stream!.entries[0]!;
  assert.equal(e.timestampNs, T0 + 5n);
  assert.equal(e.timestampNs, e.timestampNs);
});

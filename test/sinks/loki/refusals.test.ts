// The 400 parser against Loki's own words: the message formats of pkg/validation/validate.go as the
// distributor fills them (util.GroupedErrors joins them), and the ingester's out-of-order report
// exactly as Loki's stream_test.go expects it. No network, no sim: strings in, refusals out.
import { test } from "node:test";
import assert from "node:assert/strict";
import { goTimeNs, parseRefusals, readSelector } from "../../../src/sinks/receiving-loki/refusals.ts";
import { attribute } from "../../../src/sinks/receiving-loki/attribute.ts";
import { LogEntry } from "../../../src/model.ts";

const STREAM = '{event_type="LoginEventStream", job="sf2loki", source="pubsub"}';
const LABELS = { event_type: "LoginEventStream", job: "sf2loki", source: "pubsub" };

test("a lone too-old message: no group prefix, stream and second read", () => {
  const body =
    `entry for stream '${STREAM}' has timestamp too old: 2026-11-20T10:00:00Z, ` +
    "oldest acceptable timestamp is: 2026-11-24T12:00:00Z\n";
  const { refusals, unparsed, reports } = parseRefusals(body);
  assert.deepEqual(unparsed, []);
  assert.deepEqual(reports, []);
  assert.equal(refusals.length, 1);
  const r = refusals[0]!;
  assert.equal(r.reason, "too_old");
  assert.deepEqual(r.labels, LABELS);
  assert.equal(r.count, 1);
  assert.deepEqual(r.match, { by: "second", sec: BigInt(Date.UTC(2026, 10, 20, 10) / 1000), pick: "oldest" });
  assert.equal(r.detail, body.trim());
});

test("grouped errors: '<n> errors like:' prefixes, '; ' joins, every Loki validation message", () => {
  const parts = [
    `3 errors like: entry for stream '${STREAM}' has timestamp too old: 2026-11-20T10:00:00Z, oldest acceptable timestamp is: 2026-11-24T12:00:00+01:00`,
    `1 errors like: entry for stream '${STREAM}' has timestamp too new: 2026-12-01T13:00:00Z`,
    `2 errors like: Max entry size '262144' bytes exceeded for stream '${STREAM}' while adding an entry with length '300000' bytes`,
    `1 errors like: stream '${STREAM}' has structured metadata too large: '70000' bytes, limit: '65536' bytes. Please see \`limits_config.max_structured_metadata_size\` or contact your Loki administrator to increase it.`,
    `1 errors like: stream '${STREAM}' has too many structured metadata labels: '130', limit: '128'. Please see \`limits_config.max_structured_metadata_entries_count\` or contact your Loki administrator to increase it.`,
    `1 errors like: stream '${STREAM}' includes structured metadata, but this feature is disallowed. Please see \`limits_config.allow_structured_metadata\` or contact your Loki administrator to enable it.`,
    `1 errors like: entry for stream '{a="1",b="2"}' has 16 label names; limit 15`,
    `1 errors like: stream '{a="1"}' has label value too long: 'x; y'`,
    `1 errors like: Error parsing labels '{a="1"' with error: 1:8: parse error: unexpected end of input`,
  ];
  const { refusals, unparsed } = parseRefusals(parts.join("; ") + "\n");
  assert.deepEqual(unparsed, []);
  assert.deepEqual(
    refusals.map((r) => [r.reason, r.count, r.match.by]),
    [
      ["too_old", 3, "second"],
      ["too_far_in_future", 1, "second"],
      ["line_too_long", 2, "line_bytes"],
      ["metadata_too_large", 1, "metadata_bytes"],
      ["metadata_too_large", 1, "metadata_count"],
      ["metadata_disallowed", 1, "has_metadata"],
      ["label_limits", 1, "stream"],
      ["label_limits", 1, "stream"],
      ["label_limits", 1, "stream"],
    ],
  );
  // "; " inside a message (label names; limit) and inside a quoted value does not split it.
  assert.equal(refusals[6]!.detail, `entry for stream '{a="1",b="2"}' has 16 label names; limit 15`);
  assert.equal(refusals[7]!.detail, `stream '{a="1"}' has label value too long: 'x; y'`);
  assert.equal(refusals[8]!.rawLabels, '{a="1"');
  assert.equal(refusals[8]!.labels, undefined);
  assert.deepEqual(refusals[2]!.match, { by: "line_bytes", bytes: 300_000 });
});

test("the ingester's out-of-order report: nanosecond instants, the cap, the stream at the end", () => {
  // Loki's TestMaxReturnedStreamsErrors expectation (pkg/ingester/stream_test.go), two lines listed.
  const body =
    "entry with timestamp 1970-01-01 00:00:00 +0000 UTC ignored, reason: 'entry too far behind, entry timestamp is: 1970-01-01T00:00:00Z, oldest acceptable timestamp is: 1970-01-01T00:00:10Z',\n" +
    "entry with timestamp 1970-01-01 00:00:01.000000123 +0000 UTC ignored, reason: 'entry too far behind, entry timestamp is: 1970-01-01T00:00:01Z, oldest acceptable timestamp is: 1970-01-01T00:00:10Z',\n" +
    `user 'fake', total ignored: 10 out of 10 for stream: {foo="bar"}`;
  const { refusals, reports, unparsed } = parseRefusals(body);
  assert.deepEqual(unparsed, []);
  assert.deepEqual(
    refusals.map((r) => [r.reason, r.match]),
    [
      ["too_far_behind", { by: "timestamp", ns: 0n }],
      ["too_far_behind", { by: "timestamp", ns: 1_000_000_123n }],
    ],
  );
  assert.deepEqual(reports, [
    { labels: { foo: "bar" }, rawLabels: `{foo="bar"}`, listed: 2, total: 10, oldestSec: 10n },
  ]);
});

test("an httpgrpc status prefix is skipped; unknown text is kept as unparsed", () => {
  const { refusals, unparsed } = parseRefusals(
    `rpc error: code = Code(400) desc = entry for stream '{a="b"}' has timestamp too new: 2026-12-01T13:00:00Z; ` +
      "<html>502 Bad Gateway</html>",
  );
  assert.equal(refusals.length, 1);
  assert.deepEqual(unparsed, ["<html>502 Bad Gateway</html>"]);
  assert.deepEqual(parseRefusals("entry too far behind").unparsed, ["entry too far behind"]);
});

test("Go-quoted label values and Go time strings", () => {
  const text = '{a="x\\"y\\\\z\\n", b="\\u00e9\\t"} tail';
  assert.deepEqual(readSelector(text, 0), [{ a: 'x"y\\z\n', b: "é\t" }, text.length - 5]);
  assert.equal(readSelector('{a="unterminated}', 0), undefined);
  assert.equal(
    goTimeNs("2026-01-01 00:00:00.5 +0100 CET"),
    BigInt(Date.UTC(2025, 11, 31, 23)) * 1_000_000n + 500_000_000n,
  );
});

test("attribution: the n oldest of a second fall, everything unnamed counts as stored", () => {
  const sec = BigInt(Date.UTC(2026, 10, 20, 10) / 1000) * 1_000_000_000n;
  const mk = (ts: bigint, labels: Record<string, string> = LABELS): LogEntry =>
    new LogEntry({ timestampNs: ts, labels, line: `l${ts}`, checkpoint: { key: "k", value: "v" } });
  // Three entries in the cut-off second; Loki refused the two older ones.
  const entries = [
    mk(sec + 900n),
    mk(sec + 100n),
    mk(sec + 500n),
    mk(sec + 5_000_000_000n),
    mk(sec, { job: "x" }),
  ];
  const body = `2 errors like: entry for stream '${STREAM}' has timestamp too old: 2026-11-20T10:00:00Z, oldest acceptable timestamp is: 2026-11-20T10:00:00Z`;
  const { refused, unsettled } = attribute(entries, parseRefusals(body));
  assert.deepEqual(
    refused.map((r) => r.entry),
    [entries[1], entries[2]],
  );
  assert.deepEqual(unsettled, []);
  // Named more often than the batch can account for: that stream's unnamed entries stay open.
  const short = attribute(entries, parseRefusals(body.replace("2 errors", "5 errors")));
  assert.deepEqual(short.unsettled, [entries[3]]);
  // Unreadable text: everything unnamed is open.
  const unread = attribute(entries, parseRefusals(`${body}; something else`));
  assert.equal(unread.unsettled.length, 3);
});

test("attribution tolerates labels Loki adds (service_name discovery, stream shards)", () => {
  const e = new LogEntry({
    timestampNs: 0n,
    labels: { job: "a" },
    line: "x",
    checkpoint: { key: "k", value: "v" },
  });
  const body = `entry for stream '{__stream_shard__="3", job="a"}' has timestamp too new: 2026-12-01T13:00:00Z`;
  assert.equal(attribute([e], parseRefusals(body)).refused.length, 0); // the stream, but another second
  const inSecond = `entry for stream '{job="a", service_name="a"}' has timestamp too new: 1970-01-01T00:00:00Z`;
  assert.deepEqual(
    attribute([e], parseRefusals(inSecond)).refused.map((r) => r.entry),
    [e],
  );
});

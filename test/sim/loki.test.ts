// The simulated Loki on its own: decoding, Loki-like validation, dedup counts, faults.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { fileURLToPath } from "node:url";
import { gzipSync } from "node:zlib";
import protobuf from "protobufjs";
import snappy from "snappy";
import { request } from "undici";
import { startLokiReceiver, type LokiReceiver, type LokiReceiverOptions } from "../../src/sim/loki.ts";
import { parseLabelSelector } from "../../src/sim/loki-labels.ts";

const PushRequest = protobuf
  .loadSync(fileURLToPath(new URL("../../proto/loki_push.proto", import.meta.url)))
  .lookupType("logproto.PushRequest");

async function receiver(t: TestContext, opts: LokiReceiverOptions = {}): Promise<LokiReceiver> {
  const r = await startLokiReceiver(opts);
  t.after(() => r.stop());
  return r;
}

type Values = [string, string, Record<string, string>?][];

/** One JSON stream `{job}` with [ns, line, meta?] values. */
function stream(job: string, ...values: Values): { stream: Record<string, string>; values: Values } {
  return { stream: { job }, values };
}

async function pushJson(
  r: LokiReceiver,
  streams: { stream: Record<string, string>; values: Values }[],
  gzip = false,
): Promise<{ status: number; text: string; headers: Record<string, unknown> }> {
  const raw = Buffer.from(JSON.stringify({ streams }));
  const res = await request(r.pushUrl, {
    method: "POST",
    headers: gzip
      ? { "content-type": "application/json", "content-encoding": "gzip" }
      : { "content-type": "application/json" },
    body: gzip ? gzipSync(raw) : raw,
  });
  return { status: res.statusCode, text: await res.body.text(), headers: res.headers };
}

async function pushProto(
  r: LokiReceiver,
  labels: string,
  lines: string[],
): Promise<{ status: number; text: string }> {
  const msg = {
    streams: [
      {
        labels,
        entries: lines.map((line, i) => ({ timestamp: { seconds: 1_700_000_000 + i, nanos: 7 }, line })),
      },
    ],
  };
  const res = await request(r.pushUrl, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf", "content-encoding": "snappy" },
    body: snappy.compressSync(Buffer.from(PushRequest.encode(msg).finish())),
  });
  return { status: res.statusCode, text: await res.body.text() };
}

test("the selector parser follows Loki's syntax", () => {
  assert.deepEqual(parseLabelSelector('{ a = "1" , b="x\\"y\\\\z\\n\\u00e9" }'), { a: "1", b: 'x"y\\z\né' });
  assert.deepEqual(parseLabelSelector('{a="1",}'), { a: "1" });
  for (const bad of [
    'a="1"',
    '{a="1"',
    '{1a="x"}',
    '{a=~"x"}',
    '{a="1",a="2"}',
    "{a=1}",
    '{a="1"} x',
    '{a-b="1"}',
  ]) {
    assert.throws(() => parseLabelSelector(bad), Error, bad);
  }
});

test("protobuf+snappy is decoded with ns timestamps; JSON with and without gzip", async (t) => {
  const r = await receiver(t);
  assert.equal((await pushProto(r, '{job="a"}', ["one", "two"])).status, 204);
  assert.equal((await pushJson(r, [stream("b", ["1700000000000000001", "three", { k: "v" }])])).status, 204);
  assert.equal((await pushJson(r, [stream("b", ["2", "four"])], true)).status, 204);
  assert.deepEqual(
    r.entries().map((e) => [e.labels, e.timestampNs, e.line, e.metadata]),
    [
      [{ job: "a" }, 1_700_000_000_000_000_007n, "one", {}],
      [{ job: "a" }, 1_700_000_001_000_000_007n, "two", {}],
      [{ job: "b" }, 1_700_000_000_000_000_001n, "three", { k: "v" }],
      [{ job: "b" }, 2n, "four", {}],
    ],
  );
  assert.deepEqual(r.lines({ job: "b" }), ["three", "four"]);
});

test("invalid label sets are refused with 400 while valid streams in the request are kept", async (t) => {
  const r = await receiver(t);
  assert.equal((await pushProto(r, '{job="a"', ["x"])).status, 400);
  assert.equal((await pushProto(r, "{}", ["x"])).status, 400);
  const res = await pushJson(r, [
    { stream: { "bad-name": "x" }, values: [["1", "refused"]] },
    stream("ok", ["1", "kept"]),
  ]);
  assert.equal(res.status, 400);
  assert.match(res.text, /bad-name/);
  assert.deepEqual(r.lines(), ["kept"]);
  assert.equal(r.counts.rejected, 3);
});

test("an over-size line is a 400 naming the entry's stream and length", async (t) => {
  const r = await receiver(t, { maxLineBytes: 10 });
  const res = await pushJson(r, [stream("a", ["1", "short"], ["2", "€".repeat(4)])]);
  assert.equal(res.status, 400);
  assert.match(res.text, /Max entry size '10' bytes exceeded for stream .*job.* length '12' bytes/);
  assert.deepEqual(r.lines(), ["short"]);
});

test("a decompressed body above maxBodyBytes is a 413 and nothing is kept", async (t) => {
  const r = await receiver(t, { maxBodyBytes: 1000 });
  assert.equal((await pushProto(r, '{job="a"}', ["x".repeat(2000)])).status, 413);
  const gz = await pushJson(r, [stream("a", ["1", "y".repeat(5000)])], true);
  assert.equal(gz.status, 413);
  assert.equal(r.counts.accepted, 0);
});

test("malformed bodies: bad snappy 400, unknown content type 415", async (t) => {
  const r = await receiver(t);
  const bad = await request(r.pushUrl, {
    method: "POST",
    headers: { "content-type": "application/x-protobuf" },
    body: Buffer.from("not snappy at all"),
  });
  assert.equal(bad.statusCode, 400);
  await bad.body.dump();
  const other = await request(r.pushUrl, {
    method: "POST",
    headers: { "content-type": "text/plain" },
    body: "x",
  });
  assert.equal(other.statusCode, 415);
  await other.body.dump();
});

test("the out-of-order window is off by default and refuses old entries when set", async (t) => {
  const open = await receiver(t);
  await pushJson(open, [stream("a", ["5000000000", "new"], ["1", "old"])]);
  assert.equal(open.counts.accepted, 2);
  const strict = await receiver(t, { outOfOrderWindowMs: 1000 });
  const res = await pushJson(strict, [
    stream("b", ["1", "other stream"]),
    stream("a", ["5000000000", "new"], ["4500000000", "within"], ["1", "old"]),
  ]);
  assert.equal(res.status, 400);
  // The ingester's report, in Loki's words (pkg/ingester/stream.go).
  assert.equal(
    res.text,
    "entry with timestamp 1970-01-01 00:00:00.000000001 +0000 UTC ignored, reason: 'entry too far behind, " +
      "entry timestamp is: 1970-01-01T00:00:00Z, oldest acceptable timestamp is: 1970-01-01T00:00:04Z',\n" +
      `user 'fake', total ignored: 1 out of 3 for stream: {job="a"}\n`,
  );
  assert.deepEqual(strict.lines(), ["other stream", "new", "within"]);
});

test("as Loki 3.4.6: a later stream stored whole silences an earlier stream's out-of-order refusal", async (t) => {
  const strict = await receiver(t, { outOfOrderWindowMs: 1000 });
  await pushJson(strict, [stream("a", ["5000000000", "new"])]);
  // The real binary answers this request 204 (measured): the ingester returns its last stream's result.
  const res = await pushJson(strict, [stream("a", ["1", "old"]), stream("b", ["1", "other stream"])]);
  assert.equal(res.status, 204);
  assert.deepEqual(strict.lines(), ["new", "other stream"]);
  assert.equal(strict.counts.rejected, 1, "refused all the same");
  // With the refused stream last, its report is the answer, and it wins over the distributor's own.
  const named = await pushJson(strict, [stream("b", ["2", "again"]), stream("a", ["2", "old again"])]);
  assert.equal(named.status, 400);
  assert.match(named.text, /entry too far behind.*\n.*total ignored: 1 out of 1 for stream: \{job="a"\}/s);
});

test("identical stream+timestamp+line counts as a duplicate; countBy sees every arrival", async (t) => {
  const r = await receiver(t);
  await pushJson(r, [stream("a", ["1", "id=1"], ["2", "id=2"])]);
  await pushJson(r, [stream("a", ["1", "id=1"], ["1", "id=1 changed"])]);
  await pushJson(r, [stream("b", ["1", "id=1"])]);
  assert.deepEqual(
    { accepted: r.counts.accepted, unique: r.counts.unique, duplicates: r.counts.duplicates },
    { accepted: 5, unique: 4, duplicates: 1 },
  );
  const perId = r.countBy((line) => line.slice(0, 4), { job: "a" });
  assert.deepEqual(
    [...perId],
    [
      ["id=1", 3],
      ["id=2", 1],
    ],
  );
  assert.deepEqual(
    r.streams().map((s) => [s.labels, s.entries]),
    [
      [{ job: "a" }, 4],
      [{ job: "b" }, 1],
    ],
  );
});

test("faults: forced failures with Retry-After, then normal service", async (t) => {
  const r = await receiver(t);
  r.faults.failNext(2, 429, { retryAfter: "3" });
  const first = await pushJson(r, [stream("a", ["1", "x"])]);
  assert.equal(first.status, 429);
  assert.equal(first.headers["retry-after"], "3");
  assert.equal((await pushJson(r, [stream("a", ["1", "x"])])).status, 429);
  assert.equal((await pushJson(r, [stream("a", ["1", "x"])])).status, 204);
  assert.equal(r.counts.forcedFailures, 2);
  assert.equal(r.counts.accepted, 1);
});

test("faults: stall holds requests until released; latency uses the injected sleep", async (t) => {
  const slept: number[] = [];
  const r = await receiver(t, {
    sleep: (ms) => {
      slept.push(ms);
      return Promise.resolve();
    },
  });
  r.faults.stall();
  const pending = pushJson(r, [stream("a", ["1", "held"])]);
  while (r.faults.held === 0) await new Promise((resolve) => setImmediate(resolve));
  assert.equal(r.counts.accepted, 0);
  r.faults.release();
  assert.equal((await pending).status, 204);
  r.faults.setLatency(250);
  await pushJson(r, [stream("a", ["2", "slow"])]);
  assert.deepEqual(slept, [250]);
});

test("GET /ready and /sim/loki/stats", async (t) => {
  const r = await receiver(t);
  await pushJson(r, [stream("a", ["1", "x"], ["1", "x"])]);
  const ready = await request(`${r.url}/ready`);
  assert.equal(ready.statusCode, 200);
  await ready.body.dump();
  const stats = (await (await request(`${r.url}/sim/loki/stats`)).body.json()) as Record<string, number>;
  assert.equal(stats.accepted, 2);
  assert.equal(stats.unique, 1);
  assert.equal(stats.duplicates, 1);
  assert.equal(stats.streams, 1);
  assert.equal(stats.requests, 1);
});

test("Loki's age limits: the rest of the push is stored, the 400 groups identical messages like Loki", async (t) => {
  const now = Date.UTC(2026, 11, 1, 12);
  const r = await receiver(t, {
    now: () => now,
    rejectOldSamplesMaxAgeMs: 7 * 86_400_000,
    creationGracePeriodMs: 600_000,
  });
  const ns = (ms: number): string => `${BigInt(ms) * 1_000_000n}`;
  const old = now - 8 * 86_400_000;
  const res = await pushJson(r, [
    stream(
      "a",
      [ns(old), "old 1"],
      [ns(old + 1), "old 2"],
      [ns(now - 1000), "kept"],
      [ns(now + 3_600_000), "future"],
    ),
  ]);
  assert.equal(res.status, 400);
  assert.deepEqual(r.lines(), ["kept"]);
  assert.equal(
    res.text,
    "2 errors like: entry for stream '{job=\"a\"}' has timestamp too old: 2026-11-23T12:00:00Z, " +
      "oldest acceptable timestamp is: 2026-11-24T12:00:00Z; " +
      "1 errors like: entry for stream '{job=\"a\"}' has timestamp too new: 2026-12-01T13:00:00Z\n",
  );
});

test("an out-of-order report lists at most 10 entries and counts them all", async (t) => {
  const r = await receiver(t, { outOfOrderWindowMs: 1000 });
  const values: Values = [["100000000000", "newest"]];
  for (let i = 0; i < 12; i++) values.push([String(i + 1), `behind ${i}`]);
  const res = await pushJson(r, [stream("a", ...values)]);
  assert.equal(res.status, 400);
  assert.equal(res.text.match(/^entry with timestamp /gm)?.length, 10);
  assert.match(res.text, /user 'fake', total ignored: 12 out of 13 for stream: \{job="a"\}\n$/);
});

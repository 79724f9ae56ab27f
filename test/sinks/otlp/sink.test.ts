// The OTLP sink against an independent receiver (test/support/otlp-receiver.ts, official protos):
// one test per kind of answer the OTLP/HTTP spec and Loki's /otlp/v1/logs give.
import { test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../../src/model.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { ConfigError } from "../../../src/errors.ts";
import { PermanentSinkError, RetryableSinkError, type DroppedEntries } from "../../../src/sinks/sink.ts";
import { createOtlpSink, type OtlpSink } from "../../../src/sinks/otlp/sink.ts";
import type { OtlpSinkSettings } from "../../../src/sinks/otlp/settings.ts";
import { LOKI_DEFAULT_LIMITS } from "../../../src/sinks/receiving-loki/limits.ts";
import { lokiBytesOf } from "../../../src/sinks/receiving-loki/tenant-pacer.ts";
import { encodeExportResponse } from "../../support/otlp-proto.ts";
import { startOtlpReceiver, statusBody, type OtlpReceiver } from "../../support/otlp-receiver.ts";

const T0_MS = Date.UTC(2026, 0, 1);
const T0 = BigInt(T0_MS) * 1_000_000n;
const LABELS = { job: "sf2loki", service_name: "sf2loki", environment: "prod", sf_org_id: "00D1" };

function entry(i: number, ts = T0 + BigInt(i) * 1_000_000n): LogEntry {
  return new LogEntry({
    timestampNs: ts,
    labels: { ...LABELS, source: "pubsub", event_type: "LoginEventStream" },
    line: `{"EventIdentifier":"ev-${i}"}`,
    structuredMetadata: { level: "info" },
    checkpoint: { key: "pubsub:/event/LoginEventStream", value: String(i) },
  });
}

const batchOf = (n: number): LogEntry[] => Array.from({ length: n }, (_, i) => entry(i));

function settings(url: string, over: Partial<OtlpSinkSettings> = {}): OtlpSinkSettings {
  return {
    url,
    headers: {},
    compression: "gzip",
    service_name: "sf2loki",
    batch: { max_line_bytes: 262_144 },
    ...over,
  };
}

async function harness(
  t: TestContext,
  over: Partial<OtlpSinkSettings> = {},
): Promise<{ receiver: OtlpReceiver; sink: OtlpSink; clock: ManualClock }> {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.stop());
  const clock = new ManualClock({ startMs: T0_MS + 60_000 });
  const sink = createOtlpSink(settings(receiver.url, over), { clock });
  t.after(() => sink.close());
  return { receiver, sink, clock };
}

/** Local checks off: what Loki refuses reaches it, so its answer is what is tested. */
const NO_LOCAL_CHECKS = { limits: { ...LOKI_DEFAULT_LIMITS, enabled: false } };

/** 2025-12-14T08:00:00.5Z: older than Loki's default week, so Loki refuses it. */
const OLD_NS = BigInt(Date.UTC(2025, 11, 14, 8)) * 1_000_000n + 500_000_000n;

const bodiesOf = (records: readonly { body: string }[]): string[] => records.map((r) => r.body).sort();
const linesOf = (entries: readonly LogEntry[]): string[] => entries.map((e) => e.line).sort();

/** Loki 3.4.6's words for a too-old record, as its /otlp/v1/logs sends them (checked by hand). */
const tooOld = (at: string): string =>
  `entry for stream '{deployment_environment="prod", service_name="sf2loki"}' has timestamp too old: ${at}, ` +
  `oldest acceptable timestamp is: 2025-12-25T00:01:00Z`;

test("200: every record arrives once, gzipped, with tenant, bearer and extra headers", async (t) => {
  const { receiver, sink } = await harness(t, {
    tenant_id: "acme",
    auth: "bearer",
    auth_token: "tok",
    headers: { "X-Team": "sec" },
  });
  const batch = batchOf(5);
  const result = await sink.push(batch);
  assert.deepEqual(result.dropped, []);
  assert.equal(receiver.exports.length, 1);
  const { headers, records } = receiver.exports[0]!;
  assert.equal(headers["content-encoding"], "gzip");
  assert.equal(headers["content-type"], "application/x-protobuf");
  assert.equal(headers["x-scope-orgid"], "acme");
  assert.equal(headers.authorization, "Bearer tok");
  assert.equal(headers["x-team"], "sec");
  assert.deepEqual(bodiesOf(records), linesOf(batch));
  assert.ok(
    records.every((r) => r.observedNs === T0 + 60_000_000_000n),
    "observed = the sink's now",
  );
});

test("compression none sends plain protobuf", async (t) => {
  const { receiver, sink } = await harness(t, { compression: "none" });
  await sink.push(batchOf(2));
  assert.equal(receiver.exports[0]!.headers["content-encoding"], undefined);
  assert.equal(receiver.stored.length, 2);
});

test("204 with no body (Loki's answer) is a success", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.script({ status: 204 });
  const result = await sink.push(batchOf(3));
  assert.deepEqual(result.dropped, []);
  assert.equal(receiver.exports.length, 1);
});

test("200 partial_success that names nobody: the whole export is dead-lettered, never re-sent", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.script((r) => ({
    status: 200,
    headers: { "content-type": "application/x-protobuf" },
    body: encodeExportResponse({
      rejected_log_records: 2,
      error_message: "2 records exceed the attribute limit",
    }),
    stored: r.records.slice(2),
  }));
  const told: DroppedEntries[] = [];
  const batch = batchOf(5);
  const result = await sink.push(batch, undefined, (g) => told.push(g));
  assert.equal(receiver.exports.length, 1, "nothing is sent again: the receiver kept 3 of them");
  assert.equal(result.dropped.length, 1);
  const [group] = result.dropped;
  assert.equal(group!.reason, "partial_rejected");
  assert.equal(group!.entries.length, 5);
  assert.match(group!.detail!, /2 records exceed the attribute limit/);
  assert.match(group!.detail!, /rejected 2 of 5 records without naming them.*up to 3 twice/);
  assert.equal(told.length, 1);
});

test("200 partial_success in JSON naming a record in Loki's words: only that one is dead-lettered", async (t) => {
  const { receiver, sink } = await harness(t, NO_LOCAL_CHECKS);
  const batch = [...batchOf(3), entry(9, OLD_NS)];
  receiver.script((r) => ({
    status: 200,
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      partialSuccess: { rejectedLogRecords: "1", errorMessage: tooOld("2025-12-14T08:00:00Z") },
    }),
    stored: r.records.filter((x) => x.timeNs >= T0),
  }));
  const landed: LogEntry[] = [];
  const result = await sink.push(batch, undefined, undefined, (l) => landed.push(...l));
  assert.equal(receiver.exports.length, 1);
  assert.deepEqual(
    result.dropped.map((g) => [g.reason, g.entries]),
    [["too_old", [batch[3]]]],
  );
  assert.deepEqual(linesOf(landed), linesOf(batch.slice(0, 3)));
});

test("400 in Loki's words (a Status body): the named record is dead-lettered, the stored ones not re-sent", async (t) => {
  const { receiver, sink } = await harness(t, NO_LOCAL_CHECKS);
  const old = entry(7, OLD_NS);
  const batch = [entry(0), old, entry(1)];
  receiver.script((r) => ({
    status: 400,
    headers: { "content-type": "application/octet-stream" },
    body: statusBody(tooOld("2025-12-14T08:00:00Z")),
    stored: r.records.filter((x) => x.timeNs >= T0),
  }));
  const result = await sink.push(batch);
  assert.equal(receiver.exports.length, 1, "the valid ones were stored: no second request");
  assert.deepEqual(
    result.dropped.map((g) => [g.reason, g.entries]),
    [["too_old", [old]]],
  );
  assert.match(result.dropped[0]!.detail!, /has timestamp too old/);
  assert.equal(receiver.stored.length, 2);
});

test("too old for Loki's limits: dropped before sending, as by the Loki sink", async (t) => {
  const { receiver, sink } = await harness(t);
  const result = await sink.push([entry(0), entry(1, OLD_NS)]);
  assert.deepEqual(
    result.dropped.map((g) => [g.reason, g.entries.length]),
    [["too_old", 1]],
  );
  assert.equal(receiver.stored.length, 1);
});

test("400 that names nothing (a collector refusing the whole export): the poison record is isolated", async (t) => {
  const { receiver, sink } = await harness(t);
  const batch = batchOf(8);
  const poison = batch[5]!.line;
  receiver.answer = (r) =>
    r.records.some((x) => x.body === poison)
      ? { status: 400, headers: { "content-type": "application/x-protobuf" }, body: statusBody("bad record") }
      : { status: 200 };
  const result = await sink.push(batch);
  assert.deepEqual(
    result.dropped.map((g) => [g.reason, g.detail, g.entries]),
    [["bad_request", "bad record", [batch[5]]]],
  );
  assert.deepEqual(bodiesOf(receiver.stored), linesOf(batch.filter((_, i) => i !== 5)), "the rest once each");
});

test("a one-record batch refused with 400 is Permanent", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.script({ status: 400, body: "malformed" });
  await assert.rejects(sink.push(batchOf(1)), (err: unknown) => {
    assert.ok(err instanceof PermanentSinkError);
    assert.equal(err.reason, "bad_request");
    assert.match(err.message, /HTTP 400 \(malformed\)/);
    return true;
  });
});

test("a Loki's 429 naming the tenant's ingestion limit: split below what it refused and paced, every record once", async (t) => {
  const { receiver, sink, clock } = await harness(t, { tenant_id: "slow" });
  const batch = batchOf(100);
  // Loki's /otlp/v1/logs counts the resource and its own fields too: three times our bytes here.
  const counted = 3 * lokiBytesOf(batch);
  receiver.script({
    status: 429,
    headers: { "content-type": "application/octet-stream" },
    body: statusBody(
      `Ingestion rate limit exceeded for user slow (limit: ${counted} bytes/sec) while attempting to ` +
        `ingest '100' lines totaling '${counted}' bytes, reduce log volume or contact your Loki administrator`,
      8,
    ),
  });
  await sink.push(batch);
  assert.deepEqual(bodiesOf(receiver.stored), linesOf(batch), "every record once");
  const after = receiver.exports.slice(1).map((e) => e.records.length);
  assert.ok(
    after.length >= 2 && after.every((n) => n <= 50),
    `split below the refused size: ${after.join(",")}`,
  );
  assert.ok(clock.sleeps.length > 0, "paced, not sent at once");
  assert.ok(
    clock.sleeps.every((ms) => ms < 2000),
    `paced to the named rate: ${clock.sleeps.join(",")}`,
  );
});

for (const status of [429, 502, 503, 504]) {
  test(`${status} with Retry-After: waited for, then retried`, async (t) => {
    const { receiver, sink, clock } = await harness(t);
    receiver.script({ status, headers: { "retry-after": "7" }, body: "busy" });
    await sink.push(batchOf(2));
    assert.equal(receiver.exports.length, 2);
    assert.equal(receiver.stored.length, 2);
    assert.deepEqual(clock.sleeps, [7000]);
  });
}

test("another 5xx is retried too; five failures are a RetryableSinkError naming the receiver", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.answer = () => ({ status: 500, body: "boom" });
  await assert.rejects(sink.push(batchOf(2)), (err: unknown) => {
    assert.ok(err instanceof RetryableSinkError);
    assert.match(
      err.message,
      /^the OTLP receiver push to http:\/\/127\.0\.0\.1:\d+\/v1\/logs failed after 5 attempts \(last: HTTP 500: boom\)/,
    );
    return true;
  });
  assert.equal(receiver.exports.length, 5);
});

test("401 is kept and retried, naming the keys to check", async (t) => {
  const { receiver, sink } = await harness(t);
  receiver.script({ status: 401, body: "no tenant" });
  await assert.rejects(sink.push(batchOf(1)), (err: unknown) => {
    assert.ok(err instanceof RetryableSinkError);
    assert.match(
      err.message,
      /answered HTTP 401 \(no tenant\): check sink\.otlp\.url, tenant_id and auth_token/,
    );
    return true;
  });
});

test("a header the sink sets itself is refused by name; a URL with credentials too", () => {
  assert.throws(
    () => createOtlpSink(settings("http://127.0.0.1:1/v1/logs", { headers: { Authorization: "x" } })),
    (err: unknown) =>
      err instanceof ConfigError &&
      /^sink\.otlp\.headers\.Authorization is set by the sink itself/.test(err.message),
  );
  assert.throws(
    () => createOtlpSink(settings("http://u:p@127.0.0.1:1/v1/logs")),
    (err: unknown) => err instanceof ConfigError && /^sink\.otlp\.url carries credentials/.test(err.message),
  );
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../../src/model.ts";
import { encodeExportLogsRequest } from "../../../src/sinks/otlp/encode.ts";
import { decodeExportRequest, flatRecords } from "../../support/otlp-proto.ts";

const T0 = 1_767_225_600_000_000_000n; // 2026-01-01T00:00:00Z
const OBSERVED = T0 + 5_000_000_000n;

function entry(over: {
  labels: Record<string, string>;
  ts?: bigint;
  line?: string;
  meta?: Record<string, string>;
}): LogEntry {
  return new LogEntry({
    timestampNs: over.ts ?? T0,
    labels: over.labels,
    line: over.line ?? "{}",
    structuredMetadata: over.meta ?? { level: "info" },
    checkpoint: { key: "k", value: "v" },
  });
}

const ORG_A = { job: "sf2loki", service_name: "sf2loki", sf_org_id: "00DA", environment: "prod" };
const ORG_B = { ...ORG_A, sf_org_id: "00DB", environment: "sandbox", org: "emea" };

test("the official protos read every record: body, both times, severity, resource and attributes", () => {
  const batch = [
    entry({
      labels: { ...ORG_A, source: "pubsub", event_type: "LoginEventStream" },
      ts: T0 + 123_456_789n,
      line: '{"EventIdentifier":"e1","msg":"ü€😀"}',
      meta: { level: "warn", USER_ID: "005x", z: "" },
    }),
    entry({
      labels: { ...ORG_B, source: "eventlogfile", event_type: "API" },
      ts: T0 + 1n,
      line: "",
      meta: { level: "error" },
    }),
    // Org A again, another stream, in another key order.
    entry({
      labels: { event_type: "ApiEvent", source: "eventlog_objects", ...ORG_A },
      line: "x".repeat(300),
      meta: { level: "info" },
    }),
    entry({ labels: { ...ORG_A, source: "apexlog", event_type: "ApexLog" }, meta: { level: "debug" } }),
    entry({ labels: { ...ORG_A, source: "apexlog", event_type: "ApexLog" }, meta: {} }),
  ];
  const decoded = decodeExportRequest(encodeExportLogsRequest(batch, { serviceName: "sf2loki" }, OBSERVED));
  assert.equal(decoded.resource_logs.length, 4, "one ResourceLogs per org and stream");
  assert.deepEqual(
    decoded.resource_logs.map((rl) => rl.scope_logs.length),
    [1, 1, 1, 1],
    "one ScopeLogs per resource",
  );
  const records = flatRecords(decoded);
  const a = { "service.name": "sf2loki", "salesforce.org.id": "00DA", "deployment.environment": "prod" };
  assert.deepEqual(
    records.map((r) => r.resource),
    [
      { ...a, "sf2loki.stream": "pubsub/LoginEventStream" },
      {
        "service.name": "sf2loki",
        "salesforce.org.id": "00DB",
        "deployment.environment": "sandbox",
        "salesforce.org.name": "emea",
        "sf2loki.stream": "eventlogfile/API",
      },
      // Org A's ApiEvent, in another key order: the same org, its own stream.
      { ...a, "sf2loki.stream": "eventlog_objects/ApiEvent" },
      { ...a, "sf2loki.stream": "apexlog/ApexLog" },
      { ...a, "sf2loki.stream": "apexlog/ApexLog" },
    ],
  );
  assert.ok(records.every((r) => r.scope === "sf2loki"));
  assert.ok(records.every((r) => r.observedNs === OBSERVED));
  assert.deepEqual(
    records.map((r) => [r.timeNs, r.body, r.severityNumber, r.severityText, r.attributes]),
    [
      [
        T0 + 123_456_789n,
        '{"EventIdentifier":"e1","msg":"ü€😀"}',
        13,
        "warn",
        { event_type: "LoginEventStream", source: "pubsub", USER_ID: "005x", level: "warn", z: "" },
      ],
      [T0 + 1n, "", 17, "error", { event_type: "API", source: "eventlogfile", level: "error" }],
      [T0, "x".repeat(300), 9, "info", { event_type: "ApiEvent", source: "eventlog_objects", level: "info" }],
      [T0, "{}", 5, "debug", { event_type: "ApexLog", source: "apexlog", level: "debug" }],
      [T0, "{}", 0, "", { event_type: "ApexLog", source: "apexlog" }],
    ],
  );
});

test("job and service_name labels are not sent: service.name says it, under its configured name", () => {
  const batch = [entry({ labels: { ...ORG_A, source: "pubsub", event_type: "E" } })];
  const [record] = flatRecords(
    decodeExportRequest(encodeExportLogsRequest(batch, { serviceName: "sfdc-prod" }, T0)),
  );
  assert.equal(record!.resource["service.name"], "sfdc-prod");
  assert.ok(!("job" in record!.attributes) && !("service_name" in record!.attributes));
});

test("large batches, long lines and many metadata fields keep the planned size exact", () => {
  const fields = Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`F${i}`, "v".repeat(i * 7)]));
  const batch = Array.from({ length: 3000 }, (_, i) =>
    entry({
      labels: { ...(i % 3 === 0 ? ORG_B : ORG_A), source: "pubsub", event_type: `T${i % 7}` },
      ts: T0 + BigInt(i),
      line: "é".repeat(i % 400) + String(i),
      meta: i % 2 === 0 ? { level: "info", ...fields } : { level: "warn" },
    }),
  );
  const records = flatRecords(decodeExportRequest(encodeExportLogsRequest(batch, { serviceName: "s" }, T0)));
  assert.equal(records.length, 3000);
  const byTime = new Map(records.map((r) => [r.timeNs, r]));
  for (let i = 0; i < 3000; i++) {
    const r = byTime.get(T0 + BigInt(i))!;
    assert.equal(r.body, "é".repeat(i % 400) + String(i));
    assert.equal(Object.keys(r.attributes).length, i % 2 === 0 ? 43 : 3);
  }
});

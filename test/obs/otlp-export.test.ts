// Telemetry parity: the OTLP push is protobuf (the Python version's `otlp.proto.http` encoding) and
// its resource names the service and its version. A receiver on 127.0.0.1 decodes what arrives
// with the OTLP message definitions (the subset below, field numbers as in opentelemetry-proto).
import assert from "node:assert/strict";
import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { test } from "node:test";
import protobuf from "protobufjs";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { createMetrics } from "../../src/obs/metrics.ts";

const OTLP_METRICS = `
syntax = "proto3";
package otlp;
message ExportMetricsServiceRequest { repeated ResourceMetrics resource_metrics = 1; }
message ResourceMetrics { Resource resource = 1; repeated ScopeMetrics scope_metrics = 2; }
message Resource { repeated KeyValue attributes = 1; }
message KeyValue { string key = 1; AnyValue value = 2; }
message AnyValue {
  oneof value { string string_value = 1; bool bool_value = 2; int64 int_value = 3; double double_value = 4; }
}
message ScopeMetrics { InstrumentationScope scope = 1; repeated Metric metrics = 2; }
message InstrumentationScope { string name = 1; string version = 2; }
message Metric { string name = 1; string description = 2; string unit = 3; Gauge gauge = 5; Sum sum = 7; }
message Gauge { repeated NumberDataPoint data_points = 1; }
message Sum { repeated NumberDataPoint data_points = 1; int32 aggregation_temporality = 2; bool is_monotonic = 3; }
message NumberDataPoint {
  repeated KeyValue attributes = 7;
  fixed64 start_time_unix_nano = 2;
  fixed64 time_unix_nano = 3;
  oneof value { double as_double = 4; sfixed64 as_int = 6; }
}
`;

interface KeyValue {
  key: string;
  value?: { stringValue?: string; intValue?: unknown; doubleValue?: number };
}
interface DataPoint {
  attributes?: KeyValue[];
  asDouble?: number;
  asInt?: unknown;
}
interface Decoded {
  resourceMetrics: {
    resource?: { attributes?: KeyValue[] };
    scopeMetrics?: {
      metrics?: { name: string; gauge?: { dataPoints?: DataPoint[] }; sum?: { dataPoints?: DataPoint[] } }[];
    }[];
  }[];
}

const attrs = (list: KeyValue[] | undefined): Record<string, string> =>
  Object.fromEntries((list ?? []).map((kv) => [kv.key, String(kv.value?.stringValue ?? kv.value?.intValue)]));

test("OTLP metrics arrive as protobuf with service.name, service.version and the configured attributes", async (t) => {
  const request = protobuf.parse(OTLP_METRICS).root.lookupType("otlp.ExportMetricsServiceRequest");
  const received: { headers: IncomingHttpHeaders; body: Buffer; url: string | undefined }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks), url: req.url });
      res.writeHead(200, { "content-type": "application/x-protobuf" });
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as AddressInfo;

  const metrics = createMetrics({
    version: "9.8.7",
    telemetry: {
      enabled: true,
      endpoint: `http://127.0.0.1:${port}/otlp/v1/metrics`,
      headers: { "x-scope-orgid": "tenant-1" },
      // Never reached: shutdown() flushes the one export this test looks at.
      export_interval: 3_600_000,
      resource_attributes: { "deployment.environment": "test" },
    },
    otlpHeaders: { authorization: "Basic dTpw" },
  });
  metrics.meter.createCounter("sf2loki_events_ingested").add(3, { source: "pubsub", event_type: "X" });
  await metrics.shutdown();

  assert.equal(received.length, 1);
  const [push] = received;
  assert.equal(push!.url, "/otlp/v1/metrics");
  assert.equal(push!.headers["content-type"], "application/x-protobuf");
  assert.equal(push!.headers.authorization, "Basic dTpw");
  assert.equal(push!.headers["x-scope-orgid"], "tenant-1");
  const decoded = request.toObject(request.decode(push!.body), { longs: String }) as Decoded;
  const [rm] = decoded.resourceMetrics;
  assert.deepEqual(
    Object.fromEntries(
      Object.entries(attrs(rm!.resource?.attributes)).filter(([k]) => !k.startsWith("telemetry.")),
    ),
    { "service.name": "sf2loki", "service.version": "9.8.7", "deployment.environment": "test" },
  );
  const all = (rm!.scopeMetrics ?? []).flatMap((s) => s.metrics ?? []);
  const ingested = all.find((m) => m.name === "sf2loki_events_ingested");
  assert.equal(
    String(ingested?.sum?.dataPoints?.[0]?.asDouble ?? ingested?.sum?.dataPoints?.[0]?.asInt),
    "3",
  );
  assert.deepEqual(attrs(ingested?.sum?.dataPoints?.[0]?.attributes), { source: "pubsub", event_type: "X" });
  const build = all.find((m) => m.name === "sf2loki_build_info");
  assert.deepEqual(attrs(build?.gauge?.dataPoints?.[0]?.attributes), { version: "9.8.7" });
});

test("telemetry enabled without an endpoint is refused (the Python version fell back to OTEL_EXPORTER_OTLP_*)", () => {
  assert.throws(
    () =>
      validateConfig({
        salesforce: { auth_mode: "client_credentials", client_id: "x", client_secret: "y" },
        sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
        service: { telemetry: { enabled: true } },
      }),
    (err: unknown) => err instanceof ConfigError && /telemetry\.endpoint is empty/.test(err.message),
  );
});

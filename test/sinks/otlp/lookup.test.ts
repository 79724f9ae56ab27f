// The OTLP sink's reconcile lookup (#27, #28): a Loki behind /otlp/v1/logs is asked through its query
// API beside it, for the records' stream as Loki holds OTLP records (default index labels in the
// selector, sf2loki.stream and the org as filters), with the export's tenant; a Collector is not asked.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { test, type TestContext } from "node:test";
import { LogEntry } from "../../../src/model.ts";
import { createOtlpSink } from "../../../src/sinks/otlp/sink.ts";
import type { OtlpSinkSettings } from "../../../src/sinks/otlp/settings.ts";

const T0 = 1_796_000_000_000_000_000n;
const LABELS = {
  job: "sf2loki",
  service_name: "sf2loki",
  environment: "production",
  sf_org_id: "00DA",
  source: "pubsub",
  event_type: "LoginEventStream",
};

async function fakeLoki(
  t: TestContext,
): Promise<{ url: string; asked: URLSearchParams[]; tenants: string[] }> {
  const asked: URLSearchParams[] = [];
  const tenants: string[] = [];
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    if (url.pathname !== "/loki/api/v1/query_range") {
      res.writeHead(404).end();
      return;
    }
    asked.push(url.searchParams);
    tenants.push(String(req.headers["x-scope-orgid"]));
    // What Loki 3.4.6 answers with categorize-labels: index labels as the stream, metadata apart.
    const stream = {
      service_name: "sf2loki",
      deployment_environment: "production",
      sf2loki_stream: "pubsub/LoginEventStream",
    };
    const values = [
      [String(T0), '{"n":0}', { structuredMetadata: { salesforce_org_id: "00DA" } }],
      [String(T0 + 2n), '{"n":2}', { structuredMetadata: { salesforce_org_id: "00DA" } }],
    ];
    res.writeHead(200, { "content-type": "application/json" });
    res.end(
      JSON.stringify({ status: "success", data: { resultType: "streams", result: [{ stream, values }] } }),
    );
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  t.after(
    () =>
      new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      ),
  );
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, asked, tenants };
}

function settings(url: string, over: Partial<OtlpSinkSettings> = {}): OtlpSinkSettings {
  return {
    url,
    tenant_id: "acme",
    headers: {},
    compression: "gzip",
    service_name: "sf2loki",
    batch: { max_line_bytes: 262_144 },
    reconcile: { enabled: true },
    ...over,
  };
}

const entry = (n: number): LogEntry =>
  new LogEntry({
    timestampNs: T0 + BigInt(n),
    labels: LABELS,
    line: `{"n":${n}}`,
    checkpoint: { key: "k", value: String(n) },
  });

test("a Loki's /otlp/v1/logs: the lookup asks its query API for the records' stream, as the tenant", async (t) => {
  const loki = await fakeLoki(t);
  const sink = createOtlpSink(settings(`${loki.url}/otlp/v1/logs`));
  t.after(() => sink.close());
  assert.ok(sink.lookup, "a lookup for a Loki");
  const entries = [entry(0), entry(1), entry(2)];
  const answer = await sink.lookup.stored(entries, new AbortController().signal);
  assert.deepEqual([...answer.stored], [entries[0], entries[2]], "matched by timestamp and line");
  assert.equal(
    loki.asked[0]!.get("query"),
    '{deployment_environment="production",service_name="sf2loki"} | sf2loki_stream="pubsub/LoginEventStream" | salesforce_org_id="00DA"',
  );
  assert.deepEqual(loki.tenants, ["acme"]);
});

test("a Collector's /v1/logs has no read path unless reconcile.query_url names one; reconcile off asks nothing", async (t) => {
  const loki = await fakeLoki(t);
  const collector = createOtlpSink(settings(`${loki.url}/v1/logs`));
  const named = createOtlpSink(
    settings(`${loki.url}/v1/logs`, { reconcile: { enabled: true, query_url: loki.url } }),
  );
  const off = createOtlpSink(settings(`${loki.url}/otlp/v1/logs`, { reconcile: { enabled: false } }));
  t.after(async () => {
    await Promise.all([collector.close(), named.close(), off.close()]);
  });
  assert.equal(collector.lookup, undefined);
  assert.equal(off.lookup, undefined);
  assert.ok(named.lookup);
  const answer = await named.lookup.stored([entry(0)], new AbortController().signal);
  assert.equal(answer.stored.size, 1);
});

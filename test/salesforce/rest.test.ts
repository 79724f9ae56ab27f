import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { staticAccessTokens } from "../../src/salesforce/access-token.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import {
  SalesforceBadResponseError,
  SalesforceHttpError,
  SalesforceQueryError,
  SalesforceSessionError,
  SalesforceThrottledError,
  SalesforceTransportError,
} from "../../src/salesforce/rest-errors.ts";
import {
  sfDatetime,
  simId,
  startSimRest,
  type SimEventLogFile,
  type SimRestOptions,
} from "../../src/sim/salesforce-rest/index.ts";
import { ManualClock } from "../../src/util/clock.ts";

const records = Array.from({ length: 10 }, (_, i) => ({
  Id: simId("0Yq", i),
  EventDate: sfDatetime(Date.UTC(2026, 0, 1) + i),
}));

async function client(t: TestContext, simOpts: SimRestOptions = {}, meter?: MeterProvider) {
  const clock = new ManualClock();
  const sim = await startSimRest({ clock, objects: { LoginEvent: records }, ...simOpts });
  const tokens = staticAccessTokens(
    sim.instanceUrl,
    (() => {
      let n = 0;
      return () => `token-${++n}`;
    })(),
  );
  const rest = new RestClient({
    tokens,
    apiVersion: "60.0",
    clock,
    ...(meter ? { meter: meter.getMeter("t") } : {}),
  });
  t.after(async () => {
    await rest.close();
    await sim.stop();
  });
  return { sim, rest, tokens, clock };
}

describe("RestClient: queries", () => {
  it("streams every record through nextRecordsUrl pages", async (t) => {
    const { sim, rest } = await client(t, { batchSize: 3 });
    const got = await rest.queryAll("SELECT Id FROM LoginEvent ORDER BY Id");
    assert.deepEqual(
      got.map((r) => r.Id),
      records.map((r) => r.Id),
    );
    assert.equal(sim.stats.requests, 4);
  });

  it("uses the Tooling endpoint when asked", async (t) => {
    const { rest } = await client(t, { apexLogs: [] });
    assert.deepEqual(await rest.queryAll("SELECT Id FROM ApexLog", { tooling: true }), []);
  });

  it("re-mints once on 401 and retries the same page", async (t) => {
    const { sim, rest, tokens } = await client(t, { validToken: (tok) => tok !== "token-1" });
    assert.equal((await rest.queryAll("SELECT Id FROM LoginEvent")).length, 10);
    assert.equal(tokens.mints, 2);
    assert.equal(sim.stats.unauthorized, 1);
  });

  it("gives up with a session error when the fresh token is refused too", async (t) => {
    const { rest, tokens } = await client(t, { validToken: () => false });
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent"), SalesforceSessionError);
    assert.equal(tokens.mints, 2);
  });

  it("fails fast on REQUEST_LIMIT_EXCEEDED and counts it", async (t) => {
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 3_600_000,
    });
    const metered = new MeterProvider({ readers: [reader] });
    const { sim, rest } = await client(
      t,
      { faults: [{ route: "query", kind: "throttle", times: 5 }] },
      metered,
    );
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent"), (err: unknown) => {
      assert.ok(err instanceof SalesforceThrottledError);
      assert.equal(err.code, "SF2LOKI_SF_THROTTLED");
      return true;
    });
    assert.equal(sim.stats.requests, 1);
    const { resourceMetrics } = await reader.collect();
    const m = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((x) => x.descriptor.name === "sf2loki_salesforce_api_throttled");
    assert.deepEqual(m?.dataPoints[0]?.attributes, { api: "soql" });
    await metered.shutdown();
  });

  it("retries 5xx within bounds, then reports a transient HTTP error", async (t) => {
    const { sim, rest } = await client(t, { faults: [{ route: "query", kind: "server_error", times: 2 }] });
    assert.equal((await rest.queryAll("SELECT Id FROM LoginEvent")).length, 10);
    sim.faults.add({ route: "query", kind: "server_error", times: 3 });
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent"), (err: unknown) => {
      assert.ok(err instanceof SalesforceHttpError);
      assert.equal(err.status, 503);
      assert.equal(err.transient, true);
      return true;
    });
    assert.equal(sim.stats.requests, 6);
  });

  it("does not retry a MALFORMED_QUERY", async (t) => {
    const { sim, rest } = await client(t);
    await assert.rejects(rest.queryAll("SELECT FROM WHERE"), (err: unknown) => {
      assert.ok(err instanceof SalesforceQueryError);
      assert.equal(err.sfErrorCode, "MALFORMED_QUERY");
      return true;
    });
    assert.equal(sim.stats.requests, 1);
  });

  it("turns a 2xx that is not a JSON object into a typed error, quoting at most 200 characters (#94)", async (t) => {
    const { rest } = await client(t, { faults: [{ route: "query", kind: "html", times: 1 }] });
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent"), (err: unknown) => {
      assert.ok(err instanceof SalesforceBadResponseError);
      assert.equal(err.code, "SF2LOKI_SF_BAD_RESPONSE");
      assert.match(err.message, /<html>/);
      assert.ok(!err.message.includes("\n"));
      return true;
    });
  });

  it("retries a reset connection and reports a transport error when the instance is gone", async (t) => {
    const { sim, rest } = await client(t, { faults: [{ route: "query", kind: "reset", times: 1 }] });
    assert.equal((await rest.queryAll("SELECT Id FROM LoginEvent")).length, 10);
    await sim.stop();
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent"), SalesforceTransportError);
  });

  it("returns at once when the signal aborts", async (t) => {
    const { rest } = await client(t);
    const ac = new AbortController();
    ac.abort(new Error("stopping"));
    await assert.rejects(rest.queryAll("SELECT Id FROM LoginEvent", { signal: ac.signal }), /stopping/);
  });
});

const oneFile = (): SimEventLogFile => ({
  Id: simId("0AT", 1),
  EventType: "API",
  Interval: "Hourly",
  LogDate: sfDatetime(0),
  CreatedDate: sfDatetime(0),
  Sequence: 1,
  rows: 2000,
});

describe("RestClient: JSON and downloads", () => {
  it("reads limits and describeGlobal", async (t) => {
    const { rest } = await client(t);
    const limits = await rest.getJson(rest.path("limits"));
    assert.deepEqual(limits.DailyApiRequests, { Max: 15000, Remaining: 14876 });
    const described = await rest.getJson(rest.path("sobjects/"));
    assert.ok(Array.isArray(described.sobjects));
  });

  it("streams a blob with a byte count and the server's Date", async (t) => {
    const { sim, rest, clock } = await client(t, {
      eventLogFiles: [oneFile()],
    });
    const dl = await rest.download(rest.path(`sobjects/EventLogFile/${simId("0AT", 1)}/LogFile`));
    let bytes = 0;
    for await (const chunk of dl) bytes += chunk.length;
    assert.equal(dl.bytes, bytes);
    assert.equal(bytes, sim.stats.bytesServed);
    assert.equal(dl.serverDateMs, Math.floor(clock.now() / 1000) * 1000);
  });

  it("surfaces a connection cut mid-body as a transport error", async (t) => {
    const { rest } = await client(t, {
      eventLogFiles: [oneFile()],
      faults: [{ route: "elf_csv", kind: "cut", times: 1, afterBytes: 5000 }],
    });
    const dl = await rest.download(rest.path(`sobjects/EventLogFile/${simId("0AT", 1)}/LogFile`));
    await assert.rejects(
      (async () => {
        for await (const _ of dl) {
          // drain
        }
      })(),
      SalesforceTransportError,
    );
    assert.ok(dl.bytes >= 5000 && dl.bytes < 10_000);
  });
});

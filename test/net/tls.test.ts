// `tls:` under salesforce, sink.loki and sink.otlp, against loopback HTTPS servers whose certificate a
// private test CA signed (test/fixtures/tls): refused without `ca_file`, accepted with it; a server
// demanding a client certificate refuses a client without `cert_file`/`key_file` and takes one with
// them. Salesforce and Loki go from a config through the daemon's own wiring.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test, type TestContext } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { LogEntry, msToNs } from "../../src/model.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { startSimOrg } from "../../src/sim/salesforce/index.ts";
import { createLokiSink, type LokiSink } from "../../src/sinks/loki/sink.ts";
import { createOtlpSink } from "../../src/sinks/otlp/sink.ts";
import { RetryableSinkError } from "../../src/sinks/sink.ts";
import { ManualClock } from "../../src/util/clock.ts";
import type { TlsFiles } from "../../src/util/tls-files.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { startOtlpReceiver } from "../support/otlp-receiver.ts";
import { tempDir } from "../support/tmp.ts";
import { TLS_FILES, startTlsFront, type TlsFront } from "../support/tls-front.ts";

const NONE: TlsFiles = { ca_file: null, cert_file: null, key_file: null };
const CA: TlsFiles = { ...NONE, ca_file: TLS_FILES.ca };
const MUTUAL: TlsFiles = {
  ca_file: TLS_FILES.ca,
  cert_file: TLS_FILES.clientCert,
  key_file: TLS_FILES.clientKey,
};

const T0_MS = Date.UTC(2026, 0, 1);

function entries(n: number): LogEntry[] {
  return Array.from(
    { length: n },
    (_, i) =>
      new LogEntry({
        timestampNs: msToNs(T0_MS) + BigInt(i),
        labels: { source: "pubsub", event_type: "LoginEventStream" },
        line: `{"n":${i}}`,
        checkpoint: { key: "pubsub:/event/LoginEventStream", value: String(i) },
      }),
  );
}

async function front(t: TestContext, target: string, clientCa = false): Promise<TlsFront> {
  const f = await startTlsFront(target, { clientCa });
  t.after(() => f.close());
  return f;
}

/** A Loki sink pushing to `https`'s Loki with `tls`, closed when the test ends. */
function lokiSink(t: TestContext, https: TlsFront, tls: TlsFiles): LokiSink {
  const sink = createLokiSink(
    {
      url: `${https.url}/loki/api/v1/push`,
      encoding: "protobuf",
      compression: "snappy",
      labels: {},
      batch: { max_line_bytes: 262_144 },
      tls,
    },
    { clock: new ManualClock() },
  );
  t.after(() => sink.close());
  return sink;
}

/** A push that fails on the TLS handshake: retried, then kept (a RetryableSinkError), never sent. */
function refusedHandshake(err: unknown): boolean {
  return err instanceof RetryableSinkError && /certificate|self-signed|SSL|alert|socket/i.test(err.message);
}

test("sink.loki.tls: Loki behind a private CA is refused without ca_file and reached with it", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const https = await front(t, receiver.url);
  const sink = (tls: TlsFiles) => lokiSink(t, https, tls);
  await assert.rejects(sink(NONE).push(entries(2)), refusedHandshake);
  assert.ok(https.refused() > 0);
  assert.equal(receiver.counts.accepted, 0);
  await sink(CA).push(entries(2));
  assert.equal(receiver.counts.accepted, 2);
});

test("sink.loki.tls: a Loki that demands a client certificate takes cert_file and key_file", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const mtls = await front(t, receiver.url, true);
  const sink = (tls: TlsFiles) => lokiSink(t, mtls, tls);
  await assert.rejects(sink(CA).push(entries(1)), RetryableSinkError);
  assert.equal(receiver.counts.accepted, 0);
  await sink(MUTUAL).push(entries(1));
  assert.equal(receiver.counts.accepted, 1);
});

test("sink.otlp.tls: the OTLP receiver behind a private CA, refused without ca_file, reached with it", async (t) => {
  const receiver = await startOtlpReceiver();
  t.after(() => receiver.stop());
  const https = await front(t, receiver.url);
  const sink = (tls: TlsFiles) => {
    const s = createOtlpSink(
      {
        url: `${https.url}/v1/logs`,
        headers: {},
        compression: "gzip",
        service_name: "sf2loki",
        batch: { max_line_bytes: 262_144 },
        tls,
      },
      { clock: new ManualClock() },
    );
    t.after(() => s.close());
    return s;
  };
  await assert.rejects(sink(NONE).push(entries(2)), refusedHandshake);
  assert.equal(receiver.exports.length, 0);
  await sink(CA).push(entries(2));
  assert.equal(receiver.exports.length, 1);
});

test("salesforce.tls and sink.loki.tls from a config: the daemon's token and push reach private-CA hosts", async (t) => {
  const sim = await startSimOrg({ clientSecret: "s" });
  t.after(() => sim.stop());
  const login = await front(t, sim.loginUrl);
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const loki = await front(t, receiver.url);
  const graphOf = (tls: TlsFiles) => {
    const graph = buildGraph(
      validateConfig({
        salesforce: {
          login_url: login.url,
          auth_mode: "client_credentials",
          client_id: sim.clientId,
          client_secret: "s",
          tls,
        },
        sink: { loki: { url: `${loki.url}/loki/api/v1/push`, tls } },
        state: { file: { path: join(tempDir(), "state.json") } },
      }),
      { clock: new ManualClock() },
    );
    t.after(() => Promise.all([graph.orgs[0]!.rest.close(), graph.sink.close(), graph.store.close()]));
    return graph;
  };
  const without = graphOf(NONE);
  await assert.rejects(
    without.orgs[0]!.auth.token(),
    /token request to https:\/\/127\.0\.0\.1:\d+\/services\/oauth2\/token failed/,
  );
  assert.equal(sim.stats().mints, 0);
  const withCa = graphOf(CA);
  assert.equal((await withCa.orgs[0]!.auth.token()).instanceUrl, sim.instanceUrl);
  await withCa.sink.push(entries(3));
  assert.equal(receiver.counts.accepted, 3);
});

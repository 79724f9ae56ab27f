// Subscribe-and-decode throughput: our Pub/Sub client vs the `salesforce-pubsub-api-client` npm
// package, on the same simulated stream in one run. Prints JSON {ours_eps, reference_eps, ratio}.
//
// The reference client always builds TLS channel credentials (it has no plaintext option), so the
// simulated org serves gRPC over TLS with a throwaway self-signed certificate made by `openssl`;
// the reference skips verification (`rejectUnauthorizedSsl: false`), ours trusts that certificate.
// Both clients therefore pay the same TLS cost on the same loopback stream.
//
// Usage: node bench/pubsub.ts [events=30000] [--samples 5] [--min-window-ms 2000]
// Each sample of each side is a timed window: subscriptions of `events` back to back until they add
// up to --min-window-ms. A figure is the median of --samples windows, the sides interleaved per
// sample so both see the same host; `ratio` is the median of the per-sample ratios. Every figure
// has its samples beside it (`<figure>_samples`), which bench/run.ts turns into a spread.
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { registerHooks } from "node:module";
import { parseArgs } from "node:util";
import { credentials } from "@grpc/grpc-js";
import { silentLogger } from "../src/obs/logger.ts";
import { TokenProvider } from "../src/salesforce/auth.ts";
import { PubSubClient } from "../src/salesforce/pubsub/client.ts";
import { simSalesforceSettings, startSimOrg, type SimOrg } from "../src/sim/salesforce/index.ts";
import { PubSubSource } from "../src/sources/pubsub/source.ts";
import { eachEntry } from "../src/sources/source.ts";
import { median, timedWindow, total } from "./sample.ts";

// avro-js 1.12.2 (the reference's Avro library) requires `underscore` from a deprecated validator it
// loads at import time but does not declare it, so the package cannot be imported as installed.
// lodash offers the same functions; the validator is never called on the subscribe path.
registerHooks({
  resolve: (specifier, context, next) => next(specifier === "underscore" ? "lodash" : specifier, context),
});
const { default: PubSubApiClient } = await import("salesforce-pubsub-api-client");

const TOPIC = "/event/LoginEventStream";
const { values: flags, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    samples: { type: "string", default: "5" },
    "min-window-ms": { type: "string", default: "2000" },
  },
});
const EVENTS = Number(positionals[0] ?? 30_000);
const SAMPLES = Number(flags.samples);
const MIN_WINDOW_MS = Number(flags["min-window-ms"]);
const SECRET = "bench-secret";

function selfSignedCert(): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), "sf2loki-bench-"));
  try {
    execFileSync(
      "openssl",
      [
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "1",
        "-subj",
        "/CN=localhost",
        "-addext",
        "subjectAltName=IP:127.0.0.1,DNS:localhost",
        "-keyout",
        join(dir, "key.pem"),
        "-out",
        join(dir, "cert.pem"),
      ],
      { stdio: "ignore" },
    );
    return {
      certPem: readFileSync(join(dir, "cert.pem"), "utf8"),
      keyPem: readFileSync(join(dir, "key.pem"), "utf8"),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function authFor(sim: SimOrg): TokenProvider {
  return new TokenProvider({ settings: simSalesforceSettings(sim, SECRET, { org_id: sim.orgId }) });
}

async function ours(sim: SimOrg, certPem: string): Promise<{ ms: number }> {
  const client = new PubSubClient({
    endpoint: sim.pubsubEndpoint,
    auth: authFor(sim),
    credentials: credentials.createSsl(Buffer.from(certPem)),
    stallTimeoutMs: 0,
  });
  const start = performance.now();
  let n = 0;
  for await (const item of client.subscribe(
    { topic: TOPIC, preset: "EARLIEST", numRequested: 100 },
    new AbortController().signal,
  )) {
    if (item.kind === "event" && ++n === EVENTS) break;
  }
  const ms = performance.now() - start;
  client.close();
  return { ms };
}

/** The whole source: decode plus shaping (canonical JSON line, metadata, timestamp, token). */
async function oursSource(sim: SimOrg, certPem: string): Promise<{ ms: number }> {
  const auth = authFor(sim);
  const client = new PubSubClient({
    endpoint: sim.pubsubEndpoint,
    auth,
    credentials: credentials.createSsl(Buffer.from(certPem)),
    stallTimeoutMs: 0,
  });
  const source = new PubSubSource({
    settings: {
      enabled: true,
      endpoint: sim.pubsubEndpoint,
      default_num_requested: 100,
      replay_preset: "EARLIEST",
      topics: [TOPIC],
      include: ["*"],
      exclude: [],
      rediscovery_interval: 0,
      sample: {},
      bridge_max_bytes: 128 * 1024 * 1024,
    },
    auth,
    client,
    org: { name: "", environment: "production" },
    structuredMetadataFields: ["Username", "SourceIp"],
  });
  const ac = new AbortController();
  const start = performance.now();
  let n = 0;
  for await (const entry of eachEntry(source.events({ load: () => Promise.resolve(undefined) }, ac.signal))) {
    if (!entry.checkpointOnly && ++n === EVENTS) break;
  }
  const ms = performance.now() - start;
  client.close();
  return { ms };
}

async function reference(sim: SimOrg, token: string): Promise<{ ms: number }> {
  const client = new PubSubApiClient(
    {
      authType: "user-supplied",
      accessToken: token,
      // The reference insists on https://; the simulator compares instance URLs without the scheme.
      instanceUrl: sim.instanceUrl.replace(/^http:/, "https:"),
      organizationId: sim.orgId,
      pubSubEndpoint: sim.pubsubEndpoint,
      rejectUnauthorizedSsl: false,
    },
    silentLogger,
  );
  await client.connect();
  const start = performance.now();
  await new Promise<void>((resolve, reject) => {
    let n = 0;
    client.subscribeFromEarliestEvent(
      TOPIC,
      (_info, type, data) => {
        if (type === "event" && ++n === EVENTS) resolve();
        if (type === "error") reject(data instanceof Error ? data : new Error(String(data)));
      },
      null,
    );
  });
  const ms = performance.now() - start;
  client.close();
  return { ms };
}

const tls = selfSignedCert();
const sim = await startSimOrg({
  eventsPerTopic: EVENTS,
  topics: [TOPIC],
  clientSecret: SECRET,
  seed: 1,
  tls,
});
const token = (await authFor(sim).token()).accessToken;
await ours(sim, tls.certPem); // warm-up: the simulator encodes and caches every payload once

/** Events/s over one timed window of back-to-back subscriptions. */
async function windowEps(run: () => Promise<{ ms: number }>): Promise<number> {
  const passes = await timedWindow(MIN_WINDOW_MS, run);
  return (passes.length * EVENTS) / (total(passes, (p) => p.ms) / 1000);
}

const samples = { ours: [] as number[], reference: [] as number[], source: [] as number[] };
for (let i = 0; i < SAMPLES; i++) {
  samples.ours.push(await windowEps(() => ours(sim, tls.certPem)));
  samples.reference.push(await windowEps(() => reference(sim, token)));
  samples.source.push(await windowEps(() => oursSource(sim, tls.certPem)));
}
const ratios = (xs: number[]): number[] => xs.map((x, i) => Number((x / samples.reference[i]!).toFixed(3)));
const rounded = (xs: number[]): number[] => xs.map((x) => Math.round(x));
console.log(
  JSON.stringify({
    events: EVENTS,
    transport: "grpc+tls over loopback (self-signed)",
    samples: SAMPLES,
    min_window_ms: MIN_WINDOW_MS,
    ours_eps: Math.round(median(samples.ours)),
    reference_eps: Math.round(median(samples.reference)),
    ratio: Number(median(ratios(samples.ours)).toFixed(2)),
    ours_source_eps: Math.round(median(samples.source)),
    source_ratio: Number(median(ratios(samples.source)).toFixed(2)),
    ours_eps_samples: rounded(samples.ours),
    reference_eps_samples: rounded(samples.reference),
    ratio_samples: ratios(samples.ours),
    ours_source_eps_samples: rounded(samples.source),
    source_ratio_samples: ratios(samples.source),
  }),
);
// The reference's close() closes its channel but never cancels its subscription streams, so shutting
// the simulator down would surface as an unhandled stream 'error' in the reference; exit instead.
process.exit(0);

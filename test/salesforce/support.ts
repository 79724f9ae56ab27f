// Shared fixtures for the Salesforce-side tests: a simulated org per test, settings pointing at it,
// an RSA key pair, a metrics reader, and a logger whose records the test can read.
import { generateKeyPairSync } from "node:crypto";
import { Writable } from "node:stream";
import type { TestContext } from "node:test";
import { pino } from "pino";
import {
  AggregationTemporality,
  MeterProvider,
  MetricReader,
  type ResourceMetrics,
} from "@opentelemetry/sdk-metrics";
import type { Meter } from "@opentelemetry/api";
import type { Logger } from "../../src/obs/logger.ts";
import { TokenProvider, type SalesforceSettings } from "../../src/salesforce/auth.ts";
import { PubSubClient, type PubSubClientOptions } from "../../src/salesforce/pubsub/client.ts";
import {
  simSalesforceSettings,
  startSimOrg,
  type SimOrg,
  type SimOrgOptions,
} from "../../src/sim/salesforce/index.ts";

let keys: { privatePem: string; privatePkcs1Pem: string; publicPem: string } | undefined;

export function keyPair(): { privatePem: string; privatePkcs1Pem: string; publicPem: string } {
  if (!keys) {
    const { privateKey, publicKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
    keys = {
      privatePem: privateKey.export({ type: "pkcs8", format: "pem" }).toString(),
      privatePkcs1Pem: privateKey.export({ type: "pkcs1", format: "pem" }).toString(),
      publicPem: publicKey.export({ type: "spki", format: "pem" }).toString(),
    };
  }
  return keys;
}

export const SECRET = "sim-secret";

export async function simOrg(t: TestContext, opts: Partial<SimOrgOptions> = {}): Promise<SimOrg> {
  const sim = await startSimOrg({
    eventsPerTopic: 0,
    topics: ["/event/LoginEventStream"],
    clientSecret: SECRET,
    ...opts,
  });
  t.after(() => sim.stop());
  return sim;
}

export function clientCredentials(sim: SimOrg, over: Partial<SalesforceSettings> = {}): SalesforceSettings {
  return simSalesforceSettings(sim, SECRET, over);
}

export function jwtBearer(sim: SimOrg, over: Partial<SalesforceSettings> = {}): SalesforceSettings {
  return clientCredentials(sim, {
    auth_mode: "jwt_bearer",
    client_secret: null,
    username: "integration@example.com",
    private_key: keyPair().privatePkcs1Pem,
    ...over,
  });
}

class TestReader extends MetricReader {
  constructor() {
    super({ aggregationTemporalitySelector: () => AggregationTemporality.CUMULATIVE });
  }
  protected override async onForceFlush(): Promise<void> {}
  protected override async onShutdown(): Promise<void> {}
}

export interface MetricsHarness {
  meter: Meter;
  /** Sum of every data point of `name` whose attributes include `attrs`; gauges: the last value. */
  value(name: string, attrs?: Record<string, string>): Promise<number>;
}

export function metricsHarness(): MetricsHarness {
  const reader = new TestReader();
  const provider = new MeterProvider({ readers: [reader] });
  return {
    meter: provider.getMeter("test"),
    async value(name, attrs = {}) {
      const { resourceMetrics }: { resourceMetrics: ResourceMetrics } = await reader.collect();
      let total = 0;
      for (const scope of resourceMetrics.scopeMetrics) {
        for (const metric of scope.metrics) {
          if (metric.descriptor.name !== name) continue;
          for (const dp of metric.dataPoints) {
            const match = Object.entries(attrs).every(([k, v]) => dp.attributes[k] === v);
            if (match && typeof dp.value === "number") total += dp.value;
          }
        }
      }
      return total;
    },
  };
}

export interface LogCapture {
  logger: Logger;
  records: Record<string, unknown>[];
  messages(level?: number): string[];
}

/** A real pino logger writing into an array. Levels: 30 info, 40 warn, 50 error. */
export function captureLogs(): LogCapture {
  const records: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line) records.push(JSON.parse(line) as Record<string, unknown>);
      }
      cb();
    },
  });
  const logger = pino({ level: "debug" }, sink);
  return {
    logger,
    records,
    messages: (level) =>
      records.filter((r) => level === undefined || r.level === level).map((r) => String(r.msg)),
  };
}

/** Polls (real time, tiny steps) until `cond` holds; for waiting on sockets, never on our clocks. */
export async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

/** A Pub/Sub client on its own token provider against `sim` (plaintext, no stall timeout), closed after `t`. */
export function clientFor(
  t: TestContext,
  sim: SimOrg,
  over: Partial<PubSubClientOptions> = {},
): { client: PubSubClient; auth: TokenProvider } {
  const auth = new TokenProvider({ settings: clientCredentials(sim) });
  const client = new PubSubClient({
    endpoint: sim.pubsubEndpoint,
    auth,
    insecure: true,
    stallTimeoutMs: 0,
    ...over,
  });
  t.after(() => {
    client.close();
  });
  return { client, auth };
}

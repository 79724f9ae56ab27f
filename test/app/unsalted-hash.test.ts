// The Python version warned at startup when a `hash` transform runs without a salt; so does this one,
// once per org, naming the sources, and says nothing when a salt is set or no hash rule exists.
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, it } from "node:test";
import { pino } from "pino";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { unsaltedHashSources } from "../../src/egress/salt-check.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { tempDir } from "../support/tmp.ts";

const HASH = [{ action: "hash", fields: ["Username"] }];

function config(sources: Record<string, unknown>): Record<string, unknown> {
  return {
    salesforce: {
      auth_mode: "client_credentials",
      client_id: "x",
      client_secret: "y",
      org_id: "00D000000000001AAA",
      login_url: "http://127.0.0.1:9",
    },
    sources: { pubsub: { enabled: false }, ...sources },
    sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
    state: { file: { path: join(tempDir(), "state.json") } },
  };
}

/** The WARN records of a run that is stopped before it starts: the startup banner still speaks. */
async function startupWarnings(tree: Record<string, unknown>): Promise<Record<string, unknown>[]> {
  const records: Record<string, unknown>[] = [];
  const logger = pino(
    { level: "warn" },
    { write: (s: string) => records.push(JSON.parse(s) as Record<string, unknown>) },
  );
  // A manual clock: the token retries that follow the banner wait for nothing.
  const app = createApp(validateConfig(tree), { logger, noHealthServer: true, clock: new ManualClock() });
  // No org is reachable: the run ends in an AuthError after the banner, which is all this reads.
  await app.run(AbortSignal.abort()).catch((err: unknown) => {
    if ((err as { code?: string }).code !== "SF2LOKI_AUTH") throw err;
  });
  return records.filter((r) => r.level === 40);
}

describe("unsalted hash startup warning", () => {
  it("warns once, naming the enabled sources whose hash rules have no salt", async () => {
    const warns = await startupWarnings(
      config({
        apexlog: { enabled: true, transforms: HASH },
        eventlog_objects: { enabled: true, objects: [{ name: "LoginEvent" }], transforms: HASH },
        eventlogfile: { enabled: false, transforms: HASH },
      }),
    );
    const salt = warns.filter((r) => /transform_salt/.test(String(r.msg)));
    assert.equal(salt.length, 1);
    assert.deepEqual(salt[0]!.sources, ["sources.eventlog_objects", "sources.apexlog"]);
  });

  it("is silent with a salt, or without any hash rule", () => {
    const salted = validateConfig(
      config({ apexlog: { enabled: true, transforms: HASH }, transform_salt: "s" }),
    );
    assert.deepEqual(unsaltedHashSources(salted.sources), []);
    const none = validateConfig(
      config({ apexlog: { enabled: true, transforms: [{ action: "mask", fields: ["x"] }] } }),
    );
    assert.deepEqual(unsaltedHashSources(none.sources), []);
  });
});

// The two simulated orgs the multi-org app tests run against ("prod" and "emea", each its own org id
// and the demo client secret), stopped at the end of the test, and the daemon config and in-process run
// those tests share.
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { createApp, type App } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { pollingSources, simSalesforceConfig } from "../../src/sim/demo-polling.ts";
import { DEMO_SECRET } from "../../src/sim/demo-world.ts";
import { startSimOrg, type SimOrg, type SimOrgOptions } from "../../src/sim/salesforce/index.ts";

export type TwoOrgs = Record<"prod" | "emea", SimOrg>;

export async function startTwoOrgs(
  t: TestContext,
  opts: Omit<SimOrgOptions, "orgId" | "clientSecret">,
): Promise<TwoOrgs> {
  const orgs = {} as TwoOrgs;
  for (const [name, orgId] of [
    ["prod", "00DSIMPROD0000001A"],
    ["emea", "00DSIMEMEA0000001A"],
  ] as const) {
    const org = await startSimOrg({ orgId, clientSecret: DEMO_SECRET, ...opts });
    orgs[name] = org;
    t.after(() => org.stop());
  }
  return orgs;
}

/** One org's `orgs[]` entry: every polling source the sim serves, and `topic` over Pub/Sub when asked. */
export function orgTree(
  name: string,
  org: SimOrg,
  opts: { pubsub: boolean; topic: string; sink?: Record<string, unknown> },
): Record<string, unknown> {
  return {
    name,
    salesforce: simSalesforceConfig(org, DEMO_SECRET),
    sources: {
      ...pollingSources(org.rest.data),
      allow_overlap: true,
      pubsub: {
        endpoint: org.pubsubEndpoint,
        insecure: true,
        topics: opts.pubsub ? [opts.topic] : [],
        replay_preset: "EARLIEST",
      },
    },
    ...(opts.sink ? { sink: { loki: opts.sink } } : {}),
  };
}

/** Runs the daemon in-process until `until` holds (or, when finite, until it ends), then stops it. */
export async function runDaemon(
  tree: Record<string, unknown>,
  opts: { pollOnce?: boolean; until?: (app: App) => Promise<boolean> | boolean; what?: string },
): Promise<App> {
  const app = createApp(validateConfig(tree), {
    healthAddr: "127.0.0.1:0",
    ...(opts.pollOnce ? { pollOnce: true } : {}),
  });
  const stop = new AbortController();
  const running = app.run(stop.signal);
  try {
    if (opts.until) {
      const until = opts.until;
      const deadline = Date.now() + 30_000;
      while (!(await until(app))) {
        assert.ok(Date.now() < deadline, `timed out waiting for ${opts.what ?? "the daemon"}`);
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
    } else {
      await running;
    }
  } finally {
    stop.abort();
    await running;
  }
  return app;
}

/** The top-level keys beside `orgs`: the sink, a file store, a short shutdown grace. */
export function common(statePath: string, loki: Record<string, unknown>): Record<string, unknown> {
  return {
    sink: { loki: { batch: { flush_interval: "50ms" }, ...loki } },
    state: { file: { path: statePath } },
    service: { shutdown_grace: "1s" },
  };
}

// Two orgs on two tenants of one real Loki (#26 case 4): each tenant's LogQL sees its own org's events
// only, every one once, from every source the simulated orgs serve.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import type { SimPollingData } from "../../src/sim/salesforce-rest/index.ts";
import { tempDir } from "../support/tmp.ts";
import { common, orgTree, runDaemon, startTwoOrgs } from "../support/two-orgs.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
const TOPIC = "/event/LoginEventStream";
const EVENTS = 50;
const POLLING: SimPollingData = {
  objects: { LoginEvent: { records: 30 } },
  eventLogFiles: { API: { rows: 50, files: 1 } },
  apexLogs: 10,
};
const PER_ORG = EVENTS + 30 + 50 + 10;
const DAY_NS = 86_400_000_000_000n;

test(
  "two orgs on two tenants: each tenant's LogQL sees only its own org, each event once",
  { skip: shared.missing },
  async (t) => {
    const loki = shared.loki;
    const orgs = await startTwoOrgs(t, { topics: [TOPIC], eventsPerTopic: EVENTS, polling: POLLING });
    const main = loki.reader("tenant-main");
    const emea = loki.reader("tenant-emea");
    const total = async (): Promise<number> => {
      const range = [nowNs() - 7n * DAY_NS, nowNs() + 60_000_000_000n] as const;
      return (await main.count('{job=~".+"}', ...range)) + (await emea.count('{job=~".+"}', ...range));
    };
    await runDaemon(
      {
        orgs: [
          orgTree("prod", orgs.prod, { pubsub: true, topic: TOPIC }),
          orgTree("emea", orgs.emea, { pubsub: true, topic: TOPIC, sink: { tenant_id: "tenant-emea" } }),
        ],
        ...common(join(tempDir(), "state.json"), { url: loki.pushUrl, tenant_id: "tenant-main" }),
      },
      {
        pollOnce: true,
        what: `${2 * PER_ORG} entries in Loki`,
        until: async () => (await total()) >= 2 * PER_ORG,
      },
    );
    // Polled rows are dated at their event's time, which may be hours back: flushed, every query sees them.
    await loki.flush();
    const range = [nowNs() - 7n * DAY_NS, nowNs() + 60_000_000_000n] as const;
    assert.deepEqual(Object.fromEntries(await main.countBy('{job=~".+"}', ...range, ["org"])), {
      prod: PER_ORG,
    });
    assert.deepEqual(Object.fromEntries(await emea.countBy('{job=~".+"}', ...range, ["org"])), {
      emea: PER_ORG,
    });
    assert.deepEqual(
      Object.fromEntries(await emea.countBy('{job=~".+"}', ...range, ["source"])),
      Object.fromEntries(await main.countBy('{job=~".+"}', ...range, ["source"])),
      "the same sources on both tenants",
    );
  },
);

// The simulated world `sf2loki demo` and `sf2loki sim` run: a Salesforce org streaming RTEM events over
// Pub/Sub (and, when asked, serving polled objects, EventLogFiles and ApexLogs) and a Loki receiver,
// both on loopback, plus a config that points sf2loki at them.

import type { Clock } from "../util/clock.ts";
import { startSimOrg, type SimOrg } from "./salesforce/index.ts";
import type { SimPollingData } from "./salesforce-rest/generate.ts";
import { startLokiReceiver, type LokiReceiver } from "./loki.ts";
import { pollingDelivery, pollingSources, simSalesforceConfig, type Delivery } from "./demo-polling.ts";

export const DEMO_TOPICS = [
  "/event/LoginEventStream",
  "/event/ApiEventStream",
  "/event/LightningUriEventStream",
];
export const DEMO_SECRET = "sim-secret";

export interface DemoWorld {
  org: SimOrg;
  loki: LokiReceiver;
  /** A config tree (before validation) for a daemon against this world. */
  config(statePath: string): Record<string, unknown>;
  /** Per topic: emitted by the org, unique ids Loki accepted, duplicates, missing ids. */
  stats(): Record<string, { emitted: number; delivered: number; duplicates: number; missing: number }>;
  /** Up to `limit` missing EventIdentifiers per topic. */
  missingIds(limit: number): Record<string, string[]>;
  /** Per polling checkpoint key (`eventlogfile:API`, ...): records the org holds versus Loki. */
  pollingStats(): Record<string, Delivery>;
  stop(): Promise<void>;
}

/** The sim's event id in a shipped line (`sim-<Topic>-<n>`), or "" for a line without one. */
function eventIdentifier(line: string): string {
  return /"EventIdentifier": ?"([^"]+)"/.exec(line)?.[1] ?? "";
}

export async function startDemoWorld(opts: {
  seed?: number;
  eventsPerTopic: number;
  topics?: string[];
  /** Also serve (and poll) this generated data; the default demo is Pub/Sub only. */
  polling?: SimPollingData;
  /** The simulated org's id (its streams' `sf_org_id`); a fixed one by default. */
  orgId?: string;
  /**
   * Stream every topic through a managed subscription (`SF2Loki_<Topic>`, defaultReplay EARLIEST)
   * instead of Subscribe: Salesforce keeps the replay, and sf2loki commits it there (`demo --managed`).
   */
  managed?: boolean;
  /** The org's clock (record visibility, event dates, session timeout); default the system clock. */
  clock?: Pick<Clock, "now">;
  /** The org's session timeout in ms (see SimOrgOptions); default: tokens never time out. */
  sessionTimeoutMs?: number;
}): Promise<DemoWorld> {
  const topics = opts.topics ?? DEMO_TOPICS;
  const managed = opts.managed === true ? topics.map((topic) => managedDemoSubscription(topic)) : [];
  const org = await startSimOrg({
    seed: opts.seed ?? 1,
    eventsPerTopic: opts.eventsPerTopic,
    topics,
    clientSecret: DEMO_SECRET,
    ...(opts.polling ? { polling: opts.polling } : {}),
    ...(opts.orgId ? { orgId: opts.orgId } : {}),
    managedSubscriptions: managed.map((m) => ({ ...m, defaultReplay: "EARLIEST" as const })),
    ...(opts.clock ? { rest: { clock: opts.clock } } : {}),
    ...(opts.sessionTimeoutMs !== undefined ? { sessionTimeoutMs: opts.sessionTimeoutMs } : {}),
  });
  // Loki's default age limits: the simulated org dates its events in the present, so a clean demo
  // refuses nothing; an entry dated otherwise shows up as a drop, as it would against a real Loki.
  const loki = await startLokiReceiver({
    rejectOldSamplesMaxAgeMs: 168 * 3_600_000,
    creationGracePeriodMs: 10 * 60_000,
  });
  return {
    org,
    loki,
    config: (statePath) => ({
      salesforce: simSalesforceConfig(org, DEMO_SECRET),
      sources: {
        pubsub: {
          endpoint: org.pubsubEndpoint,
          insecure: true,
          replay_preset: "EARLIEST",
          ...(managed.length > 0
            ? { managed_subscriptions: managed.map((m) => ({ name: m.developerName, topic: m.topic })) }
            : { topics }),
        },
        ...pollingSources(org.rest.data),
      },
      sink: { loki: { url: loki.pushUrl, batch: { flush_interval: "200ms" } } },
      state: { file: { path: statePath } },
      service: { health_addr: "127.0.0.1:0", shutdown_grace: "5s" },
    }),
    stats: () => {
      const out: Record<string, { emitted: number; delivered: number; duplicates: number; missing: number }> =
        {};
      const simStats = org.stats().topics;
      for (const topic of topics) {
        const name = topic.split("/").pop()!;
        const counts = loki.countBy((line) => /"EventIdentifier": ?"([^"]+)"/.exec(line)?.[1] ?? "", {
          event_type: name,
        });
        const emitted = simStats[topic]?.maxReplayId ?? 0;
        let delivered = 0;
        let duplicates = 0;
        for (const [id, n] of counts) {
          if (id === "") continue;
          delivered++;
          duplicates += n - 1;
        }
        out[topic] = { emitted, delivered, duplicates, missing: Math.max(0, emitted - delivered) };
      }
      return out;
    },
    missingIds: (limit) => {
      const out: Record<string, string[]> = {};
      const simStats = org.stats().topics;
      for (const topic of topics) {
        const name = topic.split("/").pop()!;
        const seen = new Set(loki.countBy(eventIdentifier, { event_type: name }).keys());
        const missing: string[] = [];
        const emitted = simStats[topic]?.maxReplayId ?? 0;
        for (let n = 1; n <= emitted && missing.length < limit; n++) {
          const id = `sim-${name}-${n}`;
          if (!seen.has(id)) missing.push(id);
        }
        out[topic] = missing;
      }
      return out;
    },
    pollingStats: () => pollingDelivery(org, loki),
    stop: async () => {
      await Promise.allSettled([org.stop(), loki.stop()]);
    },
  };
}

/** The demo's managed subscription for `topic`: `/event/LoginEventStream` -> `SF2Loki_LoginEventStream`. */
export function managedDemoSubscription(topic: string): { developerName: string; topic: string } {
  return {
    developerName: `SF2Loki_${topic
      .split("/")
      .pop()!
      .replace(/[^A-Za-z0-9]/g, "_")}`,
    topic,
  };
}

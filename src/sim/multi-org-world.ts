// The multi-org simulated world: N Salesforce orgs behind one simulated instance (one HTTP and one
// gRPC port) streaming RTEM events, a Loki receiver, and an `orgs:` config that points sf2loki at
// them. `sf2loki sim --orgs N` runs it; the sharding end-to-end tests count delivery per org with it.
import { startSimOrgs, type SimOrg, type SimOrgs } from "./salesforce/index.ts";
import { startLokiReceiver, type LokiReceiver } from "./loki.ts";
import { simSalesforceConfig } from "./demo-polling.ts";
import { DEMO_SECRET, DEMO_TOPICS } from "./demo-world.ts";

/** What one org emitted on one topic versus what Loki accepted with that org's `org` label. */
export interface OrgTopicDelivery {
  emitted: number;
  delivered: number;
  duplicates: number;
  missing: number;
  /** Lines of this org's events that Loki holds under another org's label (must stay 0). */
  misfiled: number;
}

export interface MultiOrgWorld {
  sim: SimOrgs;
  loki: LokiReceiver;
  /** Org names, `org1`..`orgN`: the `orgs[].name` of the config, hence the shard names. */
  names: string[];
  org(name: string): SimOrg;
  /** A config tree (before validation): one `orgs:` entry per org, a shared sink, a file store. */
  config(statePath: string): Record<string, unknown>;
  /** Per org, per topic. */
  stats(): Record<string, Record<string, OrgTopicDelivery>>;
  /** Sums over every org and topic. */
  totals(): OrgTopicDelivery;
  /** Appends `perTopic` events to every topic of every org. */
  publish(perTopic: number): void;
  stop(): Promise<void>;
}

export function orgNames(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `org${i + 1}`);
}

/** `sim-<org>-<Topic>-<n>` (org names as `orgNames` makes them): the org and topic an event id names. */
function parseId(id: string): { org: string; topic: string } | undefined {
  const m = /^sim-([A-Za-z0-9_]+)-([A-Za-z]+)-\d+$/.exec(id);
  return m ? { org: m[1]!, topic: m[2]! } : undefined;
}

export async function startMultiOrgWorld(opts: {
  orgs: number;
  seed?: number;
  eventsPerTopic: number;
  topics?: string[];
}): Promise<MultiOrgWorld> {
  if (!Number.isInteger(opts.orgs) || opts.orgs < 1)
    throw new Error(`sim: orgs must be ≥ 1, got ${opts.orgs}`);
  const topics = opts.topics ?? DEMO_TOPICS;
  const names = orgNames(opts.orgs);
  const sim = await startSimOrgs({
    // Multi-org ids (`sim-org1-…`) even for one org, so the world's accounting never changes shape.
    orgs: names.map((name, i) => ({
      name,
      seed: (opts.seed ?? 1) + i,
      eventsPerTopic: opts.eventsPerTopic,
      topics,
      clientSecret: DEMO_SECRET,
      eventIdPrefix: `sim-${name}`,
    })),
  });
  const loki = await startLokiReceiver();
  const shortName = (topic: string): string => topic.slice(topic.lastIndexOf("/") + 1);

  const stats = (): Record<string, Record<string, OrgTopicDelivery>> => {
    // One pass over Loki: (label org, event id) -> copies.
    const counts = loki.countBy((line, entry) => {
      const id = /"EventIdentifier": ?"([^"]+)"/.exec(line)?.[1];
      return id === undefined ? "" : `${entry.labels.org ?? ""}\u0000${id}`;
    });
    const out: Record<string, Record<string, OrgTopicDelivery>> = {};
    for (const name of names) {
      out[name] = {};
      const simStats = sim.org(name).stats().topics;
      for (const topic of topics) {
        const emitted = simStats[topic]?.maxReplayId ?? 0;
        out[name][shortName(topic)] = { emitted, delivered: 0, duplicates: 0, missing: emitted, misfiled: 0 };
      }
    }
    for (const [key, n] of counts) {
      if (key === "") continue;
      const [label, id] = key.split("\u0000") as [string, string];
      const named = parseId(id);
      const row = named ? out[named.org]?.[named.topic] : undefined;
      if (!named || !row) continue;
      if (label !== named.org) {
        row.misfiled += n;
        continue;
      }
      row.delivered++;
      row.duplicates += n - 1;
      row.missing = Math.max(0, row.emitted - row.delivered);
    }
    return out;
  };

  return {
    sim,
    loki,
    names,
    org: (name) => sim.org(name),
    config: (statePath) => ({
      orgs: names.map((name) => ({
        name,
        salesforce: simSalesforceConfig(sim.org(name), DEMO_SECRET),
        sources: {
          pubsub: { endpoint: sim.pubsubEndpoint, insecure: true, topics, replay_preset: "EARLIEST" },
        },
      })),
      sink: { loki: { url: loki.pushUrl, batch: { flush_interval: "200ms" } } },
      state: { file: { path: statePath } },
      service: { health_addr: "127.0.0.1:0", shutdown_grace: "5s" },
    }),
    stats,
    totals: () => {
      const sum: OrgTopicDelivery = { emitted: 0, delivered: 0, duplicates: 0, missing: 0, misfiled: 0 };
      for (const perTopic of Object.values(stats()))
        for (const row of Object.values(perTopic)) {
          sum.emitted += row.emitted;
          sum.delivered += row.delivered;
          sum.duplicates += row.duplicates;
          sum.missing += row.missing;
          sum.misfiled += row.misfiled;
        }
      return sum;
    },
    publish: (perTopic) => {
      for (const org of sim.orgs) for (const topic of topics) org.faults.publish(topic, perTopic);
    },
    stop: async () => {
      await Promise.allSettled([sim.stop(), loki.stop()]);
    },
  };
}

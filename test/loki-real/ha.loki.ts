// The HA failover proofs against the real Loki (#27): real daemons on s3_lease + S3 and on k8s_lease +
// GCS (the emulators). The leader is killed -9 mid-stream with its pushes stored but unanswered and
// the next one stopped with SIGTERM, or the leader is cut off at the wire (RST, a silent blackhole, or
// only its store blackholed). The replicas push to and look up in the real Loki; the verdict is
// LogQL's: per topic, count_over_time (every stored copy) and the log query (distinct) both equal what
// the simulated org emitted. The harness's own checks still run on a copy of what the real Loki took.
import assert from "node:assert/strict";
import { test, type TestContext } from "node:test";
import {
  HaRig,
  ISOLATION_CASES,
  STALL_MS,
  isolateLeader,
  killThenTerm,
  type PairingKind,
  type RealLokiTarget,
} from "../chaos/ha-support.ts";
import { ShardRig, shardingProof } from "../chaos/sharding-support.ts";
import { INDEX_STREAM } from "./support/otlp-sink.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
/** The simulated backlog (5 000 events a second apart) and the run fit in 3 hours. */
const RANGE_NS = 3n * 3_600_000_000_000n;
const SLICE_NS = 600_000_000_000n;
/** Runs of each scenario (the issue asks for 3; LOKI_REAL_RUNS=1 for a quick look). */
const RUNS = Number(process.env.LOKI_REAL_RUNS ?? "3");
let tenants = 0;

async function realRig(t: TestContext, kind: PairingKind, seed: number): Promise<[HaRig, string]> {
  const realLoki: RealLokiTarget = { url: shared.loki.url, tenant: `ha-${++tenants}` };
  return [await HaRig.start(t, kind, { seed, eventsPerTopic: 5000 }, { realLoki }), realLoki.tenant];
}

/** How the judge selects a topic's entries: the Loki sink's labels, or OTLP's indexed stream. */
const LOKI_WIRE = { all: '{job="sf2loki"}', topic: (type: string) => `{event_type="${type}"}` };
const OTLP_WIRE = {
  all: '{service_name="sf2loki"}',
  topic: (type: string) => `{service_name="sf2loki", sf2loki_stream="pubsub/${type}"}`,
};

/** Per topic, what the org emitted against what the real Loki holds: every copy, and distinct. */
async function judgeTopics(
  t: TestContext,
  rig: HaRig,
  tenant: string,
  figures: unknown,
  wire = LOKI_WIRE,
): Promise<Record<string, { emitted: number; counted: number; distinct: number }>> {
  const reader = shared.loki.reader(tenant);
  const start = nowNs() - RANGE_NS;
  const end = nowNs() + 60_000_000_000n;
  const counted = await reader.countBy(wire.all, start, end, ["event_type"]);
  const judged: Record<string, { emitted: number; counted: number; distinct: number }> = {};
  for (const [topic, s] of Object.entries(rig.world.stats())) {
    const type = topic.split("/").pop()!;
    let distinct = 0;
    // Sliced: a paginated log query over hours of a fresh Loki lost whole pages (see exactly-once).
    for (let from = start; from < end; from += SLICE_NS) {
      const to = from + SLICE_NS < end ? from + SLICE_NS : end;
      distinct += new Set(
        (await reader.entries(wire.topic(type), from, to)).map((e) => `${e.tsNs}\u0000${e.line}`),
      ).size;
    }
    judged[type] = { emitted: s.emitted, counted: counted.get(type) ?? 0, distinct };
  }
  t.diagnostic(`in the real Loki: ${JSON.stringify({ figures, judged })}`);
  return judged;
}

/** Every topic the org emitted is in the real Loki once: by count_over_time and by the log query. */
async function assertExactlyOnce(
  t: TestContext,
  rig: HaRig,
  tenant: string,
  figures: unknown,
  wire = LOKI_WIRE,
): Promise<void> {
  for (const [type, j] of Object.entries(await judgeTopics(t, rig, tenant, figures, wire))) {
    assert.equal(j.distinct, j.emitted, `${type}: every event stored`);
    assert.equal(j.counted, j.emitted, `${type}: count_over_time counts each once`);
  }
}

/** The chaos tier's cuts on the object-store pairings; the file pairing's pause stays there. */
const CUTS = ISOLATION_CASES.filter(([kind]) => kind !== "file_lease + file");
for (let run = 1; run <= RUNS; run++) {
  for (const [i, kind] of (["s3_lease + s3", "k8s_lease + gcs"] as PairingKind[]).entries()) {
    test(
      `run ${run}: ${kind}: kill -9 then SIGTERM of the leader, every topic exactly once in the real Loki`,
      { skip: shared.missing },
      async (t) => {
        const [rig, tenant] = await realRig(t, kind, 40 + 10 * run + i);
        await assertExactlyOnce(t, rig, tenant, await killThenTerm(t, rig));
      },
    );
  }
  for (const [i, [kind, how, scope]] of CUTS.entries()) {
    const cut = `${how} of the leader's ${scope === "all" ? "lease and store" : "store only"}`;
    test(
      `run ${run}: ${kind}, ${cut}: every topic exactly once in the real Loki`,
      { skip: shared.missing },
      async (t) => {
        const [rig, tenant] = await realRig(t, kind, 140 + 10 * run + i);
        rig.extra = { service: { watchdog: { stall_timeout: `${STALL_MS / 1000}s` } } };
        await assertExactlyOnce(t, rig, tenant, await isolateLeader(t, rig, how, scope));
      },
    );
  }
}

test(
  "OTLP (#28): s3_lease + s3, kill -9 then SIGTERM of the leader, every topic exactly once in the real Loki",
  { skip: shared.missing },
  async (t) => {
    const realLoki: RealLokiTarget = { url: shared.loki.url, tenant: "ha-otlp" };
    // docs/otlp.md "Streams": the tenant indexes sf2loki.stream, one Loki stream a topic.
    await shared.loki.setLimits({ [realLoki.tenant]: INDEX_STREAM });
    const rig = await HaRig.start(
      t,
      "s3_lease + s3",
      { seed: 31, eventsPerTopic: 5000 },
      { realLoki, otlp: true },
    );
    // The new leader looks up in Loki's query API, beside its /otlp/v1/logs, what it re-reads.
    await assertExactlyOnce(t, rig, realLoki.tenant, await killThenTerm(t, rig), OTLP_WIRE);
  },
);

/** Per org and event type, what the multi-org world emitted against what the real Loki holds. */
async function assertShardsExactlyOnce(
  t: TestContext,
  rig: ShardRig,
  tenant: string,
  figures: unknown,
): Promise<void> {
  const reader = shared.loki.reader(tenant);
  const start = nowNs() - RANGE_NS;
  const end = nowNs() + 60_000_000_000n;
  const counted = await reader.countBy('{job="sf2loki"}', start, end, ["org", "event_type"]);
  const judged: Record<string, { emitted: number; counted: number; distinct: number }> = {};
  for (const [org, topics] of Object.entries(rig.world.stats())) {
    for (const [topic, s] of Object.entries(topics)) {
      const type = topic.split("/").pop()!;
      let distinct = 0;
      for (let from = start; from < end; from += SLICE_NS) {
        const to = from + SLICE_NS < end ? from + SLICE_NS : end;
        distinct += new Set(
          (await reader.entries(`{org="${org}", event_type="${type}"}`, from, to)).map(
            (e) => `${e.tsNs}\u0000${e.line}`,
          ),
        ).size;
      }
      judged[`${org}/${type}`] = {
        emitted: s.emitted,
        counted: counted.get(`${org}|${type}`) ?? 0,
        distinct,
      };
    }
  }
  t.diagnostic(`in the real Loki: ${JSON.stringify({ figures, judged })}`);
  assert.ok(Object.keys(judged).length >= 6, "every org judged");
  for (const [key, j] of Object.entries(judged)) {
    assert.equal(j.distinct, j.emitted, `${key}: every event stored`);
    assert.equal(j.counted, j.emitted, `${key}: count_over_time counts each once`);
  }
}

for (let run = 1; run <= RUNS; run++) {
  test(
    `run ${run}: s3_lease sharding, 3 replicas x 6 orgs, kill -9, a 4th joins, SIGTERM all: every org exactly once in the real Loki`,
    { skip: shared.missing },
    async (t) => {
      const tenant = `shards-${run}`;
      const rig = await ShardRig.start(
        t,
        "s3_lease + s3",
        { orgs: 6, seed: 60 + run, eventsPerTopic: 1000 },
        undefined,
        {
          realLoki: { url: shared.loki.url, tenant },
        },
      );
      await assertShardsExactlyOnce(t, rig, tenant, await shardingProof(t, rig));
    },
  );
}

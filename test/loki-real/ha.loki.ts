// The HA failover proofs against the real Loki (#27): real daemons on s3_lease + S3 and on k8s_lease +
// GCS (the emulators), the leader killed -9 mid-stream with its pushes stored but unanswered, then the
// new leader stopped with SIGTERM. The replicas push to and look up in the real Loki; the verdict is
// LogQL's: per topic, count_over_time (every stored copy) and the log query (distinct) both equal what
// the simulated org emitted. The harness's own checks still run on a copy of what the real Loki took.
import assert from "node:assert/strict";
import { test } from "node:test";
import { HaRig, killThenTerm, type PairingKind, type RealLokiTarget } from "../chaos/ha-support.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
/** The simulated backlog (5 000 events a second apart) and the run fit in 3 hours. */
const RANGE_NS = 3n * 3_600_000_000_000n;
const SLICE_NS = 600_000_000_000n;

for (const [i, kind] of (["s3_lease + s3", "k8s_lease + gcs"] as PairingKind[]).entries()) {
  test(
    `${kind}: kill -9 then SIGTERM of the leader, every topic exactly once in the real Loki`,
    { skip: shared.missing },
    async (t) => {
      const realLoki: RealLokiTarget = { url: shared.loki.url, tenant: `ha-${i}` };
      const rig = await HaRig.start(t, kind, { seed: 40 + i, eventsPerTopic: 5000 }, { realLoki });
      const figures = await killThenTerm(t, rig);
      const reader = shared.loki.reader(realLoki.tenant);
      const start = nowNs() - RANGE_NS;
      const end = nowNs() + 60_000_000_000n;
      const counted = await reader.countBy('{job="sf2loki"}', start, end, ["event_type"]);
      const judged: Record<string, { emitted: number; counted: number; distinct: number }> = {};
      for (const [topic, s] of Object.entries(rig.world.stats())) {
        const type = topic.split("/").pop()!;
        let distinct = 0;
        // Sliced: a paginated log query over hours of a fresh Loki lost whole pages (see exactly-once).
        for (let from = start; from < end; from += SLICE_NS) {
          const to = from + SLICE_NS < end ? from + SLICE_NS : end;
          distinct += new Set(
            (await reader.entries(`{event_type="${type}"}`, from, to)).map((e) => `${e.tsNs}\u0000${e.line}`),
          ).size;
        }
        judged[type] = { emitted: s.emitted, counted: counted.get(type) ?? 0, distinct };
      }
      t.diagnostic(`${kind} in the real Loki: ${JSON.stringify({ figures, judged })}`);
      for (const [type, j] of Object.entries(judged)) {
        assert.equal(j.distinct, j.emitted, `${type}: every event stored`);
        assert.equal(j.counted, j.emitted, `${type}: count_over_time counts each once`);
      }
    },
  );
}

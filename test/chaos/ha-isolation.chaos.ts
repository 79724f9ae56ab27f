// The chaos runs of #17, too long for `npm test` (scripts/chaos.sh runs them after the suite, bounded):
// for every HA pairing, the leader is cut off at the wire (a partition that answers with RST, a silent
// blackhole, or only its checkpoint store blackholed) or, on the file pairing, paused (SIGSTOP), over
// CHAOS_RUNS runs each. Every run must lose nothing, regress nothing, let no old term write into the
// new one, never show two leaders, and end no process but the ones the test stops.
import { test } from "node:test";
import { HaRig, ISOLATION_CASES, STALL_MS, isolateLeader } from "./ha-support.ts";

const RUNS = Number(process.env.CHAOS_RUNS ?? "1");

let seed = 100;
for (let run = 1; run <= RUNS; run++) {
  for (const [kind, how, scope] of ISOLATION_CASES) {
    const s = seed++;
    test(`run ${run}: ${kind}, ${how} of the leader's ${scope === "all" ? "lease and store" : "store only"}`, async (t) => {
      const rig = await HaRig.start(t, kind, { seed: s, eventsPerTopic: 5000 });
      rig.extra = { service: { watchdog: { stall_timeout: `${STALL_MS / 1000}s` } } };
      await isolateLeader(t, rig, how, scope);
    });
  }
}

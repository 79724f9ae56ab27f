// Issue #14's scaling figure: the same backlog (6 orgs x 3 Pub/Sub topics, EARLIEST) drained by ONE
// sharded replica, then by THREE, each replica a real `sf2loki` process (bin/sf2loki.js, with the
// daemon's V8 flags) against the multi-org simulated Salesforce, the Loki receiver and the S3 emulator
// (s3_lease + s3 state), as in test/chaos/sharding-s3.chaos.ts. Prints one JSON line:
// `scaling` = events/s with 3 replicas ÷ events/s with 1, and each replica's CPU seconds and share of
// the work. On a 2-core host three replicas cannot beat two cores, and the simulator and receiver share
// them, so read `cpu_share` (how evenly the work spread) and `paper_scaling` (each replica on a core of
// its own, from the CPU each replica spent on its share) beside `scaling`.
//   node bench/sharding.ts [eventsPerTopic=40000]   (720 000 events per side; ~2 min on 2 cores)
import { loadavg } from "node:os";
import type { TestContext } from "node:test";
import { setTimeout as delay } from "node:timers/promises";
import { procSample, ShardRig } from "../test/chaos/sharding-support.ts";

const PER_TOPIC = Number(process.argv[2] ?? 40_000);
const ORGS = 6;
// The shipped lease timing (coordinate.*: 30 s ttl, 10 s renew), not the chaos tests' 3 s / 1 s: a
// replica's coordination work per second is part of what it costs, and production pays this much.
const TIMING = { ttl: "30s", renew_interval: "10s" };

interface Drain {
  replicas: number;
  events: number;
  seconds: number;
  eps: number;
  /** CPU each replica spent after its health server answered (start-up excluded). */
  cpu_seconds: Record<string, number>;
  /** Each replica's CPU seconds over the total: 1/N each is an even spread. */
  cpu_share: Record<string, number>;
  held: Record<string, string[]>;
  duplicates: number;
}

async function drain(replicas: number): Promise<Drain> {
  // ShardRig tears down through `t.after`; a bench has no test context, so it collects the hooks.
  const hooks: (() => unknown)[] = [];
  const t = { after: (fn: () => unknown) => hooks.push(fn) } as unknown as TestContext;
  try {
    const rig = await ShardRig.start(
      t,
      "s3_lease + s3",
      { orgs: ORGS, seed: 7, eventsPerTopic: PER_TOPIC },
      TIMING,
    );
    const names = Array.from({ length: replicas }, (_, i) => `replica-${String.fromCharCode(97 + i)}`);
    const started = performance.now();
    await Promise.all(names.map((n) => rig.spawn(n)));
    // Start-up (imports, type stripping, JIT warm-up) is paid once per process, not per event.
    const atStart = new Map(rig.replicas.map((r) => [r.name, procSample(r.child.pid!).cpuS]));
    const target = rig.world.totals().emitted;
    let first = 0;
    for (;;) {
      const delivered = rig.world.totals().delivered;
      if (delivered > 0 && first === 0) first = performance.now();
      if (delivered >= target) break;
      if (performance.now() - started > 600_000)
        throw new Error(`drained ${delivered} of ${target} in 10 min`);
      await delay(500);
    }
    const seconds = (performance.now() - first) / 1000;
    const cpu = Object.fromEntries(
      rig.replicas.map((r) => [
        r.name,
        Math.round((procSample(r.child.pid!).cpuS - atStart.get(r.name)!) * 100) / 100,
      ]),
    );
    const total = Object.values(cpu).reduce((a, b) => a + b, 0);
    const held = Object.fromEntries(await rig.held());
    const totals = rig.world.totals();
    return {
      replicas,
      events: target,
      seconds: Math.round(seconds * 100) / 100,
      eps: Math.round(target / seconds),
      cpu_seconds: cpu,
      cpu_share: Object.fromEntries(
        Object.entries(cpu).map(([k, v]) => [k, Math.round((v / total) * 100) / 100]),
      ),
      held,
      duplicates: totals.duplicates,
    };
  } finally {
    for (const hook of hooks.reverse()) await hook();
  }
}

const one = await drain(1);
process.stderr.write(`[bench sharding] 1 replica: ${JSON.stringify(one)}\n`);
const three = await drain(3);
process.stderr.write(`[bench sharding] 3 replicas: ${JSON.stringify(three)}\n`);
// On paper, each replica on a core of its own: a replica drains events_i / cpu_i events per CPU-second,
// so three replicas could drain the sum of theirs, against one replica's events / cpu per second.
const perCpu = (d: Drain): number =>
  Object.values(d.cpu_seconds).reduce((sum, cpu) => sum + d.events / d.replicas / cpu, 0);
console.log(
  JSON.stringify({
    bench: "sharding",
    paper_scaling: Math.round((perCpu(three) / perCpu(one)) * 100) / 100,
    orgs: ORGS,
    events_per_topic: PER_TOPIC,
    scaling: Math.round((three.eps / one.eps) * 100) / 100,
    one_eps: one.eps,
    three_eps: three.eps,
    load_avg_1m: Math.round(loadavg()[0]! * 100) / 100,
    one,
    three,
  }),
);
process.exit(0);

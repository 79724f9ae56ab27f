// Under a capped Loki, the live Pub/Sub lane keeps flowing while a large EventLogFile drains: the
// simulated org serves one big Report file and streams live events over Pub/Sub; the daemon's governor
// caps Loki in lines/s for both lanes together. Shared by the suite's 40 000-row case
// (test/egress/lanes.test.ts) and the 1M-row case (test/slow/, run by scripts/slow.sh).
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { deepMerge } from "../../src/config/env.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir } from "../support/tmp.ts";
import { startDaemon } from "./support.ts";

const TOPIC = "/event/LoginEventStream";
const LIVE_BURSTS = 15;
const PER_BURST = 50;

export interface LanesScenario {
  rows: number;
  /** `sink.loki.egress.max_lines_per_second`. */
  cap: number;
  /** `sink.loki.batch.max_entries`: one bulk batch at the cap takes maxEntries / cap seconds. */
  maxEntries: number;
  /** How long the whole drain may take, ms. */
  drainMs: number;
}

export async function liveLaneFlowsDuringCappedDrain(t: TestContext, s: LanesScenario): Promise<void> {
  const world = await startDemoWorld({
    seed: 12,
    eventsPerTopic: 0,
    topics: [TOPIC],
    polling: { eventLogFiles: { Report: { rows: s.rows, files: 1 } } },
  });
  t.after(() => world.stop());
  const tree = deepMerge(world.config(join(tempDir(), "state.json")), {
    sink: { loki: { egress: { max_lines_per_second: s.cap }, batch: { max_entries: s.maxEntries } } },
  });
  const app = startDaemon(t, tree);
  const elf = (): number => world.pollingStats()["eventlogfile:Report"]?.delivered ?? 0;
  const live = (): number => world.stats()[TOPIC]?.delivered ?? 0;

  await waitFor(() => elf() >= Math.min(3_000, s.rows / 10), 60_000, "the drain under way");
  const lags: number[] = [];
  for (let i = 1; i <= LIVE_BURSTS; i++) {
    const at = performance.now();
    world.org.faults.publish(TOPIC, PER_BURST);
    await waitFor(() => live() >= i * PER_BURST, 5_000, `live burst ${String(i)}`);
    lags.push(performance.now() - at);
    await sleep(50);
  }
  const drained = elf();
  assert.ok(
    drained < s.rows,
    `every live burst was delivered while the file still drained (${String(drained)} rows)`,
  );
  lags.sort((a, b) => a - b);
  const p90 = lags[Math.floor(lags.length * 0.9)]!;
  t.diagnostic(
    `live p90 ${p90.toFixed(0)} ms, max ${lags.at(-1)!.toFixed(0)} ms; file rows delivered meanwhile ${String(drained)} of ${String(s.rows)}`,
  );
  // A bulk batch at the cap takes maxEntries / cap seconds; the live lane waits at most about one of
  // those plus the Pub/Sub round trip and the 200 ms flush interval, never the drain's duration.
  assert.ok(
    p90 < 1_500,
    `live delivery p90 ${p90.toFixed(0)} ms: ${lags.map((l) => l.toFixed(0)).join(",")}`,
  );
  const bulk = app.graph.pipeline.status().lanes.bulk;
  assert.ok(bulk !== undefined && bulk.queued_bytes <= app.graph.config.sink.loki.batch.queue_max_bytes);

  // Waiting on the receiver's running count: the per-id delivery check scans every stored entry, and
  // polling it at a million rows would make the harness, not the daemon, the bottleneck.
  const started = performance.now();
  const expected = s.rows + LIVE_BURSTS * PER_BURST;
  const unique = (): number => world.loki.counts.unique;
  while (unique() < expected) {
    if (performance.now() - started > s.drainMs) {
      throw new Error(`timed out waiting for the drain: ${String(unique())} of ${String(expected)} entries`);
    }
    await sleep(500);
  }
  assert.equal(elf(), s.rows, "every row of the file delivered");
  t.diagnostic(`the rest of the drain took ${((performance.now() - started) / 1000).toFixed(1)} s`);
  assert.equal(live(), LIVE_BURSTS * PER_BURST);
  assert.equal(world.stats()[TOPIC]?.duplicates, 0);
  assert.equal(world.pollingStats()["eventlogfile:Report"]?.duplicates ?? 0, 0);
}

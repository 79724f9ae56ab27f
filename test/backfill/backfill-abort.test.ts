// A one-shot backfill does not retry a dead Loki forever as the daemon does: when every push has
// failed for the abort window it stops (outcome push-failed, exit 1 in the CLI) with one line saying
// to rerun, and nothing is committed for what did not land, so the rerun loads it.
import { after, before, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parsePlan } from "../../src/backfill/options.ts";
import { runBackfill } from "../../src/backfill/run.ts";
import { validateConfig } from "../../src/config/load.ts";
import { startDemoWorld, type DemoWorld } from "../../src/sim/demo-world.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { tempDir } from "../support/tmp.ts";

const dir = tempDir("sf2loki-backfill-abort-");
let world: DemoWorld;

before(async () => {
  world = await startDemoWorld({
    eventsPerTopic: 1,
    topics: ["/event/LoginEventStream"],
    polling: { dailyEventLogFiles: { types: { URI: 30 }, days: 1 } },
  });
});
after(async () => {
  await world.stop();
});

it("every push failing past the abort window: push-failed, one line, nothing committed", async () => {
  world.loki.faults.failNext(10_000, 503);
  const config = validateConfig({
    ...world.config(join(dir, "state.json")),
    service: { shutdown_grace: "1s" },
  });
  let stderr = "";
  const since = new Date(Date.now() - 2 * 86_400_000).toISOString().slice(0, 10);
  const started = Date.now();
  const outcome = await runBackfill({
    config,
    plan: parsePlan({ since }),
    io: { stdout: () => undefined, stderr: (t) => (stderr += t), isTTY: false },
    // Virtual time: the sink's own retries back off for ~10 s in all before the pipeline sees a failed
    // push (and the abort window starts); on the system clock that made this test take 6–14 s.
    clock: new ManualClock({ auto: true, startMs: Date.now() }),
    signal: new AbortController().signal,
    pushFailureAbortMs: 500,
  });
  assert.equal(outcome, "push-failed");
  assert.ok(Date.now() - started < 15_000);
  assert.match(
    stderr,
    /sf2loki backfill: aborting: every Loki push failed for 0\.5s; fix Loki and rerun the same command to resume/,
  );
  assert.equal(world.loki.counts.accepted, 0);
  assert.throws(() => readFileSync(join(dir, "state-backfill.json"), "utf8"), /ENOENT/);
  world.loki.faults.clear();
});

// The governor as the daemon wires it, against the simulated org and the real Loki receiver: a daemon
// restarted on a day whose budget a previous process (or the Python version) already spent continues
// that count, holds everything, says why on /readyz, /statusz and /metrics, and ships nothing.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { deepMerge } from "../../src/config/env.ts";
import { GovernedSink } from "../../src/egress/governed-sink.ts";
import { utcDate } from "../../src/egress/budget.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir } from "../support/tmp.ts";
import { startDaemon } from "./support.ts";

const TOPIC = "/event/LoginEventStream";

test("a restart on a spent day: paused from the first push, /readyz 503 with the reason, nothing shipped or committed", async (t) => {
  const world = await startDemoWorld({ seed: 11, eventsPerTopic: 300, topics: [TOPIC] });
  t.after(() => world.stop());
  const statePath = join(tempDir(), "state.json");
  const today = utcDate(Date.now());
  // What the Python version (or this daemon before its restart) left: today's budget spent.
  writeFileSync(statePath, JSON.stringify({ "egress:budget": `{"date": "${today}", "bytes": 5000}` }));
  const tree = deepMerge(world.config(statePath), {
    sink: {
      loki: { egress: { daily_byte_budget: 5000, budget_action: "pause", max_lines_per_second: 1000 } },
    },
  });
  const app = startDaemon(t, tree);
  assert.ok(app.graph.egress instanceof GovernedSink);
  assert.equal(app.graph.sink, app.graph.egress, "the pipeline pushes through the governor");
  const probe = { ready: "" };
  const poll = setInterval(() => {
    const base = app.healthUrl();
    if (base !== undefined)
      fetch(`${base}/readyz`)
        .then(async (r) => (probe.ready = `${String(r.status)} ${await r.text()}`))
        .catch(() => undefined);
  }, 50);
  t.after(() => {
    clearInterval(poll);
  });
  await waitFor(
    () => probe.ready === "503 degraded: daily egress budget exhausted (resets at 00:00 UTC)",
    20_000,
    "the budget pause on /readyz",
  );
  const url = app.healthUrl()!;
  const status = (await (await fetch(`${url}/statusz`)).json()) as { egress: Record<string, unknown> };
  assert.equal(status.egress["paused"], true);
  assert.equal(status.egress["budget_used_bytes"], 5000);
  assert.equal(status.egress["budget_date"], today);
  assert.equal(status.egress["max_lines_per_second"], 1000);
  assert.equal("enforced" in status.egress, false);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  assert.match(metrics, /^sf2loki_egress_paused 1$/m);
  assert.match(metrics, /^sf2loki_egress_budget_used_bytes 5000$/m);
  assert.equal(world.loki.counts.requests, 0, "nothing shipped");
  const doc = JSON.parse(readFileSync(statePath, "utf8")) as Record<string, string>;
  assert.equal(
    doc[`pubsub:${TOPIC}`],
    undefined,
    "nothing committed: the events are re-read after the pause",
  );
  const live = await fetch(`${url}/healthz`);
  assert.equal(live.status, 200, "a deliberate pause never fails liveness");
});

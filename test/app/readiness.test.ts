// Readiness degrades when Loki has been failing for longer than service.unready_after_sink_failing,
// and heals by itself once pushes succeed again; liveness never degrades.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { deepMerge } from "../../src/config/env.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { pollHealth, runApp } from "../support/app.ts";
import { waitFor } from "../support/daemon.ts";
import { tempDir } from "../support/tmp.ts";

test("Loki failing longer than unready_after_sink_failing: /readyz 503 degraded, then ready again", async (t) => {
  const world = await startDemoWorld({ seed: 6, eventsPerTopic: 500, topics: ["/event/LoginEventStream"] });
  t.after(() => world.stop());
  world.loki.faults.failNext(1_000_000, 500);
  const tree = deepMerge(world.config(join(tempDir(), "state.json")), {
    service: { unready_after_sink_failing: "1s" },
  });
  const { app } = runApp(t, tree);
  let ready = "";
  let live = "";
  pollHealth(t, app, "/readyz", 100, (a) => (ready = a));
  pollHealth(t, app, "/healthz", 100, (a) => (live = a));

  await waitFor(
    () => /^503 degraded: loki pushes failing for \d+s$/.test(ready),
    20_000,
    "degraded readiness",
  );
  assert.equal(live, "200 ok", "liveness never degrades");
  world.loki.faults.clear();
  await waitFor(() => ready === "200 ready", 60_000, "readiness to heal");
  await waitFor(() => world.stats()["/event/LoginEventStream"]?.delivered === 500, 30_000, "delivery");
});

test("an org id that does not resolve keeps the daemon not ready and retrying; it never ships without sf_org_id (#10)", async (t) => {
  const topic = "/event/LoginEventStream";
  const world = await startDemoWorld({ seed: 8, eventsPerTopic: 200, topics: [topic] });
  t.after(() => world.stop());
  world.org.faults.failHttp("/services/oauth2/userinfo", 8, 503);
  const tree = deepMerge(world.config(join(tempDir(), "state.json")), {}) as {
    salesforce: Record<string, unknown>;
  };
  delete tree.salesforce["org_id"];
  const { app } = runApp(t, tree);
  const readies: string[] = [];
  pollHealth(t, app, "/readyz", 50, (a) => readies.push(a));
  await waitFor(() => world.stats()[topic]?.delivered === 200, 30_000, "delivery once the org id resolved");
  assert.ok(
    readies.some((r) => /^503 not ready: org id unresolved/.test(r)),
    `readiness said why it waited: ${[...new Set(readies)].join(" | ")}`,
  );
  const streams = world.loki.streams();
  assert.ok(streams.length > 0);
  for (const s of streams) assert.equal(s.labels["sf_org_id"], world.org.orgId, JSON.stringify(s.labels));
});

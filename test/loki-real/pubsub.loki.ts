// The happy path against a real Loki: the simulated org's Pub/Sub topics through the daemon, counted
// back with LogQL per event type.
import assert from "node:assert/strict";
import { test } from "node:test";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { runApp } from "../support/app.ts";
import { tempDir } from "../support/tmp.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
const missing = shared.missing;

test("Pub/Sub topics land in a real Loki, each event counted once", { skip: missing }, async (t) => {
  const world = await startDemoWorld({ eventsPerTopic: 500 });
  t.after(() => world.stop());
  const tenant = "happy";
  const tree = world.config(`${tempDir()}/state.json`) as { sink: { loki: Record<string, unknown> } };
  tree.sink.loki = { ...tree.sink.loki, url: shared.loki.pushUrl, tenant_id: tenant };
  const start = nowNs() - 7n * 86_400_000_000_000n;
  runApp(t, tree);
  const reader = shared.loki.reader(tenant);
  let counts = new Map<string, number>();
  const want = 500 * 3;
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    counts = await reader.countBy('{source="pubsub"}', start, nowNs() + 60_000_000_000n, ["event_type"]);
    if ([...counts.values()].reduce((a, b) => a + b, 0) >= want) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.deepEqual(Object.fromEntries(counts), {
    LoginEventStream: 500,
    ApiEventStream: 500,
    LightningUriEventStream: 500,
  });
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { join } from "node:path";
import { createApp } from "../../src/daemon/app.ts";
import { validateConfig } from "../../src/config/load.ts";
import { tempDir } from "../support/tmp.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;

test("sf2loki sim prints its endpoints and a config that a daemon runs against; /sim/stats reports delivery", async (t) => {
  const child = spawn(
    process.execPath,
    [BIN, "sim", "--events", "200", "--state", join(tempDir(), "s.json")],
    {
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  t.after(() => child.kill("SIGKILL"));
  const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
  const info = JSON.parse(line) as {
    stats_url: string;
    config: Record<string, unknown>;
    loki_push_url: string;
  };
  assert.match(info.loki_push_url, /^http:\/\/127\.0\.0\.1:\d+\/loki\/api\/v1\/push$/);

  type Stats = {
    topics: Record<string, { emitted: number; delivered: number; missing: number }>;
    missing_ids: Record<string, string[]>;
  };
  const stats = async (): Promise<Stats> => (await (await fetch(info.stats_url)).json()) as Stats;
  const before = await stats();
  // Published but not yet delivered: the first missing ids are listed (at most 20 per topic).
  const missing = before.missing_ids["/event/LoginEventStream"] ?? [];
  assert.deepEqual(missing.slice(0, 2), ["sim-LoginEventStream-1", "sim-LoginEventStream-2"]);
  assert.equal(missing.length, 20);

  const app = createApp(validateConfig(info.config));
  const stop = new AbortController();
  const run = app.run(stop.signal);
  let after = await stats();
  for (let i = 0; i < 100 && Object.values(after.topics).some((s) => s.delivered < 200); i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await stats();
  }
  stop.abort();
  await run;
  for (const [topic, s] of Object.entries(after.topics))
    assert.deepEqual([s.emitted, s.delivered, s.missing], [200, 200, 0], topic);
  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});

test("sf2loki sim --managed: the config streams through managed subscriptions, and /sim/stats shows their commits", async (t) => {
  const child = spawn(
    process.execPath,
    [BIN, "sim", "--managed", "--events", "100", "--state", join(tempDir(), "s.json")],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  t.after(() => child.kill("SIGKILL"));
  const [line] = (await once(createInterface({ input: child.stdout }), "line")) as [string];
  const info = JSON.parse(line) as {
    stats_url: string;
    config: { sources: { pubsub: { topics?: string[]; managed_subscriptions?: { topic: string }[] } } };
  };
  assert.equal(info.config.sources.pubsub.topics, undefined);
  assert.equal(info.config.sources.pubsub.managed_subscriptions?.length, 3);
  type Stats = { managed: { developerName: string; committed?: number }[] };
  const stats = async (): Promise<Stats> => (await (await fetch(info.stats_url)).json()) as Stats;
  const app = createApp(validateConfig(info.config));
  const stop = new AbortController();
  const run = app.run(stop.signal);
  let after = await stats();
  for (let i = 0; i < 100 && after.managed.some((m) => m.committed !== 100); i++) {
    await new Promise((r) => setTimeout(r, 100));
    after = await stats();
  }
  stop.abort();
  await run;
  for (const m of after.managed) assert.equal(m.committed, 100, m.developerName);
  child.kill("SIGTERM");
  await once(child, "exit");
});

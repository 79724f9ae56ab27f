// The daemon as wired (createApp) against the simulated org and Loki: Loki refuses one Pub/Sub event
// for good; everything else is delivered and committed, the refused event sits in the dead-letter
// directory next to the state file, and `sf2loki deadletter replay` completes the topic once Loki
// accepts it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import type { DeadLetterRecord } from "../../src/deadletter/types.ts";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { waitFor } from "../support/daemon.ts";
import { runApp } from "../support/app.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const TOPIC = "/event/LoginEventStream";

test("the daemon dead-letters the one event Loki refuses, commits past it, and replay completes the topic", async (t) => {
  const world = await startDemoWorld({ seed: 5, eventsPerTopic: 100, topics: [TOPIC] });
  t.after(() => world.stop());
  world.loki.faults.rejectLinesContaining('sim-LoginEventStream-7"');
  const dir = tempDir();
  const statePath = join(dir, "state.json");
  const tree = world.config(statePath);
  const running = runApp(t, tree);
  const stats = () => world.stats()[TOPIC]!;
  await waitFor(() => stats().delivered === 99, 30_000, "99 of 100 events delivered");
  await waitFor(
    () => {
      try {
        return Object.keys(JSON.parse(readFileSync(statePath, "utf8")) as object).some((k) =>
          k.startsWith("pubsub:"),
        );
      } catch {
        return false;
      }
    },
    10_000,
    "the Pub/Sub checkpoint committed",
  );
  const status = (await (await fetch(`${running.app.healthUrl()!}/statusz`)).json()) as {
    deadletter: Record<string, unknown>;
  };
  assert.deepEqual(status.deadletter, {
    enabled: true,
    location: join(dir, "state-deadletter"),
    held_entries: 1,
    held_bytes: status.deadletter["held_bytes"],
  });
  assert.ok((status.deadletter["held_bytes"] as number) > 100);
  running.stop.abort();
  await running.run;
  assert.equal(running.outcome(), "exited");
  assert.equal(stats().missing, 1);

  const config = writeFile(dir, "config.yaml", JSON.stringify(tree));
  const listed = await cli(["deadletter", "list", "--json", "--config", config], process.env);
  assert.equal(listed.code, 0, listed.stderr);
  const letters = listed.stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as DeadLetterRecord);
  assert.equal(letters.length, 1);
  assert.match(letters[0]!.line, /"sim-LoginEventStream-7"/);
  assert.equal(letters[0]!.reason, "bad_request");
  assert.match(letters[0]!.checkpoint_key, /^pubsub:/);
  assert.equal(letters[0]!.labels.event_type, "LoginEventStream");

  world.loki.faults.rejectLinesContaining(null);
  const replayed = await cli(["deadletter", "replay", "--config", config], process.env);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.deepEqual(
    { delivered: stats().delivered, missing: stats().missing },
    { delivered: 100, missing: 0 },
  );
  // Sent once by the replay. (The bisection that isolated it re-sent its siblings, which the simulated
  // Loki, like Loki, had already accepted from the refused request: duplicates are the sink's business.)
  assert.equal(world.loki.lines().filter((l) => l.includes('"sim-LoginEventStream-7"')).length, 1);
  assert.equal((await cli(["deadletter", "list", "--json", "--config", config], process.env)).stdout, "");
});

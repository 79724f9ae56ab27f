// End to end through the wiring: a simulated Loki refuses one entry for good; it lands in the file
// dead-letter store with Loki's reason and words while the checkpoint moves on; `sf2loki deadletter
// replay` keeps it while Loki still refuses it and delivers it (then removes it) once Loki accepts it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { loadConfig } from "../../src/config/load.ts";
import type { DeadLetterRecord } from "../../src/deadletter/types.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { startLokiReceiver } from "../../src/sim/loki.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { cli } from "../support/cli.ts";
import { entry, MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { TestMetrics } from "../sinks/loki/support.ts";

const KEY = "eventlogfile:API";

function records(stdout: string): DeadLetterRecord[] {
  return stdout
    .split("\n")
    .filter((l) => l !== "")
    .map((l) => JSON.parse(l) as DeadLetterRecord);
}

test("a refused entry is dead-lettered with Loki's words, the checkpoint moves on, and replay delivers it once Loki accepts it", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  receiver.faults.rejectLinesContaining("POISON");
  const dir = tempDir();
  const configPath = writeFile(
    dir,
    "c.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\n" +
      `sink: {loki: {url: '${receiver.pushUrl}'}}\nstate: {file: {path: ${join(dir, "state.json")}}}\n`,
  );
  const config = await loadConfig(configPath, {});
  const metrics = new TestMetrics();
  // Two days ago, with entries from just before: inside Loki's 7-day window for the replay, which
  // runs on real time (the sink checks Loki's limits before it sends).
  const clock = new ManualClock({ startMs: Date.now() - 2 * 86_400_000 });
  const ts = (n: number): bigint => BigInt(clock.now() - 60_000 + n) * 1_000_000n;
  const graph = buildGraph(config, { clock, meter: metrics.meter });
  assert.ok(graph.deadLetters, "on by default");

  const poison = entry(KEY, "2", {
    timestampNs: ts(2),
    line: "POISON: a line Loki will not take",
    labels: { source: "eventlogfile", event_type: "API" },
  });
  const items = [entry(KEY, "1", { timestampNs: ts(1) }), poison, entry(KEY, "3", { timestampNs: ts(3) })];
  const checkpoints = new MemoryStore();
  // Batches of one: a lone refused entry is a PermanentSinkError carrying Loki's message.
  const pipeline = new Pipeline({
    sources: [new ScriptedSource("eventlogfile", items)],
    sink: graph.sink,
    store: checkpoints,
    batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: 1, flush_interval_ms: 250 },
    clock,
    meter: metrics.meter,
    deadLetters: graph.deadLetters,
  });
  await pipeline.run(new AbortController().signal);
  await graph.sink.close();

  assert.equal(checkpoints.doc.get(KEY), "3", "the checkpoint moved past the refused entry");
  assert.equal(receiver.lines().length, 2);
  assert.equal(await metrics.sum("sf2loki_deadletter_entries", { reason: "bad_request" }), 1);
  assert.equal(await metrics.sum("sf2loki_deadletter_held_entries"), 1);

  const listed = await cli(["deadletter", "list", "--json", "--config", configPath]);
  assert.equal(listed.code, 0, listed.stderr);
  const [kept, ...rest] = records(listed.stdout);
  assert.equal(rest.length, 0);
  assert.equal(kept!.reason, "bad_request");
  assert.match(kept!.detail, /poison marker/, "Loki's own words");
  assert.equal(kept!.line, poison.line);
  assert.equal(kept!.timestamp_ns, poison.timestampNs.toString());
  assert.equal(kept!.checkpoint_key, KEY);
  assert.deepEqual(kept!.labels, poison.labels);

  const table = await cli(["deadletter", "list", "--config", configPath]);
  assert.match(table.stdout, /^ID +DEAD-LETTERED AT +REASON/);
  assert.match(table.stdout, /1 dead letter\(s\): bad_request=1/);
  const shown = await cli(["deadletter", "show", kept!.id, "--config", configPath]);
  assert.deepEqual(JSON.parse(shown.stdout), kept);

  // Loki still refuses it: the letter stays, with Loki's new words.
  const dry = await cli(["deadletter", "replay", "--dry-run", "--config", configPath]);
  assert.match(dry.stdout, /would replay 1 dead letter\(s\) \(bad_request=1\)/);
  const refused = await cli(["deadletter", "replay", "--config", configPath]);
  assert.equal(refused.code, 0, refused.stderr);
  assert.match(refused.stdout, /0 delivered and removed, 1 refused again/);
  assert.equal(
    records((await cli(["deadletter", "list", "--json", "--config", configPath])).stdout).length,
    1,
  );

  receiver.faults.rejectLinesContaining(null);
  const replayed = await cli(["deadletter", "replay", "--config", configPath]);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.match(
    replayed.stdout,
    /replayed 1 dead letter\(s\) to .*: 1 delivered and removed, 0 refused again/,
  );
  assert.deepEqual(
    receiver
      .entries()
      .filter((e) => e.line === poison.line)
      .map((e) => e.timestampNs),
    [poison.timestampNs],
    "delivered once, with its own timestamp",
  );
  const after = await cli(["deadletter", "list", "--json", "--config", configPath]);
  assert.equal(after.stdout, "", "the store is empty");
});

test("show of an unknown id and purge without a selection are one-line errors with the state command's exit codes", async () => {
  const dir = tempDir();
  const configPath = writeFile(
    dir,
    "c.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\n" +
      `sink: {loki: {url: 'http://127.0.0.1:1/push'}}\nstate: {file: {path: ${join(dir, "state.json")}}}\n`,
  );
  const missing = await cli(["deadletter", "show", "nope", "--config", configPath]);
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /^sf2loki: no dead letter 'nope' in .*state-deadletter/);
  assert.equal(missing.stderr.trim().split("\n").length, 1);
  const purge = await cli(["deadletter", "purge", "--config", configPath]);
  assert.equal(purge.code, 2);
  assert.match(purge.stderr, /purge needs --all/);
  const since = await cli(["deadletter", "list", "--since", "yesterday-ish", "--config", configPath]);
  assert.equal(since.code, 2);
  assert.match(since.stderr, /--since 'yesterday-ish' is neither a time/);
  const empty = await cli(["deadletter", "purge", "--all", "--config", configPath]);
  assert.equal(empty.code, 0);
  assert.match(empty.stdout, /nothing removed/);
  // A store that cannot be read: one line naming it and what to check, exit 1, no stack.
  const other = tempDir();
  writeFile(other, "state-deadletter", "not a directory");
  const brokenConfig = writeFile(
    other,
    "c.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\n" +
      `sink: {loki: {url: 'http://127.0.0.1:1/push'}}\nstate: {file: {path: ${join(other, "state.json")}}}\n`,
  );
  const broken = await cli(["deadletter", "list", "--config", brokenConfig]);
  assert.equal(broken.code, 1);
  assert.match(
    broken.stderr,
    /^sf2loki: the dead-letter store .*state-deadletter could not be read or written \(ENOTDIR.*check the path/,
  );
  assert.equal(broken.stderr.trim().split("\n").length, 1);
});

test("a replay cut short after Loki took a batch: the next replay finds it in Loki and removes it, not sent twice (#27)", async (t) => {
  const receiver = await startLokiReceiver();
  t.after(() => receiver.stop());
  const dir = tempDir();
  const configPath = writeFile(
    dir,
    "c.yaml",
    "salesforce: {client_id: a, username: u, private_key: k}\n" +
      `sink: {loki: {url: '${receiver.pushUrl}'}}\nstate: {file: {path: ${join(dir, "state.json")}}}\n`,
  );
  const graph = buildGraph(await loadConfig(configPath, {}), {});
  const ts = (n: number): bigint => BigInt(Date.now() - 60_000 + n) * 1_000_000n;
  const letters = [1, 2, 3].map((n) =>
    entry(KEY, String(n), {
      timestampNs: ts(n),
      line: `{"REQUEST_ID":"letter-${n}"}`,
      labels: { source: "eventlogfile", event_type: "API" },
    }),
  );
  await graph.deadLetters!.keep(
    { entries: letters, reason: "bad_request", detail: "refused then" },
    new AbortController().signal,
  );
  // The interrupted replay: Loki took the first two, the process died before removing them.
  await graph.sink.push(letters.slice(0, 2));
  await graph.sink.close();

  const replayed = await cli(["deadletter", "replay", "--config", configPath]);
  assert.equal(replayed.code, 0, replayed.stderr);
  assert.match(
    replayed.stdout,
    /replayed 3 dead letter\(s\) to .*: 1 delivered and removed, 0 refused again \(kept with Loki's new detail\), 2 already in Loki/,
  );
  assert.equal(receiver.counts.duplicates, 0, "no letter stored twice");
  assert.equal(receiver.counts.unique, 3);
  assert.ok(receiver.queries >= 1, "the batch was looked up first");
  const after = await cli(["deadletter", "list", "--json", "--config", configPath]);
  assert.equal(after.stdout, "", "every letter removed");
});

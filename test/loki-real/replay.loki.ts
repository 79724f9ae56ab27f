// `sf2loki deadletter replay` against the real Loki (#26 case 5): entries a tenant's limit refused are
// dead-lettered; once the tenant's limit is raised, the replay delivers each of them once, and a second
// replay has nothing left to send.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { loadConfig } from "../../src/config/load.ts";
import { LogEntry } from "../../src/model.ts";
import { Pipeline } from "../../src/pipeline/pipeline.ts";
import { DEFAULT_BATCH_SETTINGS } from "../../src/pipeline/settings.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { cli } from "../support/cli.ts";
import { MemoryStore, ScriptedSource } from "../support/fakes.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();
const KEY = "eventlogfile:API";
const VALID = 80;
const LONG = 20;

test(
  "dead letters of a tenant's line limit, replayed after the limit was raised: each arrives once",
  { skip: shared.missing },
  async () => {
    const loki = shared.loki;
    const tenant = "replay";
    await loki.setLimits({ [tenant]: { max_line_size: 1000, max_line_size_truncate: false } });
    const dir = tempDir();
    const configPath = writeFile(
      dir,
      "c.yaml",
      "salesforce: {client_id: a, username: u, private_key: k}\n" +
        `sink: {loki: {url: '${loki.pushUrl}', tenant_id: ${tenant}}}\n` +
        `state: {file: {path: ${join(dir, "state.json")}}}\n`,
    );
    const graph = buildGraph(await loadConfig(configPath, {}), {});
    const base = nowNs() - 600_000_000_000n;
    const entries = Array.from(
      { length: VALID + LONG },
      (_, i) =>
        new LogEntry({
          timestampNs: base + BigInt(i) * 1_000_000n,
          labels: { job: "sf2loki", source: "eventlogfile", event_type: "API" },
          line: `{"REQUEST_ID":"replay-${i}"${i >= VALID ? `,"pad":"${"x".repeat(1500)}"` : ""}}`,
          checkpoint: { key: KEY, value: String(i + 1) },
        }),
    );
    await new Pipeline({
      sources: [new ScriptedSource("eventlogfile", entries)],
      sink: graph.sink,
      store: new MemoryStore(),
      batch: { ...DEFAULT_BATCH_SETTINGS, max_entries: VALID + LONG, flush_interval_ms: 50 },
      deadLetters: graph.deadLetters!,
    }).run(new AbortController().signal);
    await graph.sink.close();

    const reader = loki.reader(tenant);
    const range = [base - 1n, nowNs() + 60_000_000_000n] as const;
    assert.equal(await reader.count('{event_type="API"}', ...range), VALID, "the long lines were refused");
    const listed = await cli(["deadletter", "list", "--json", "--config", configPath]);
    const letters = listed.stdout
      .split("\n")
      .filter((l) => l !== "")
      .map((l) => JSON.parse(l) as { reason: string; detail: string });
    assert.equal(letters.length, LONG);
    assert.ok(
      letters.every(
        (l) => l.reason === "line_too_long" && /Max entry size '1000' bytes exceeded/.test(l.detail),
      ),
    );

    await loki.setLimits({ [tenant]: { max_line_size: 0 } });
    const replayed = await cli(["deadletter", "replay", "--config", configPath]);
    assert.equal(replayed.code, 0, replayed.stderr);
    assert.equal(
      await reader.count('{event_type="API"}', ...range),
      VALID + LONG,
      "each replayed entry once",
    );
    assert.equal((await reader.entries('{event_type="API"}', ...range)).length, VALID + LONG);

    const again = await cli(["deadletter", "replay", "--config", configPath]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal(
      await reader.count('{event_type="API"}', ...range),
      VALID + LONG,
      "a second replay sends nothing",
    );
    const left = await cli(["deadletter", "list", "--json", "--config", configPath]);
    assert.equal(left.stdout.trim(), "", "no letter left");
  },
);

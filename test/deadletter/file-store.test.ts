// The file dead-letter store: segments next to the state file, eviction of the oldest at the bound,
// rewrites that keep what they were not asked to touch, and a torn tail that costs one line only.
import { test } from "node:test";
import assert from "node:assert/strict";
import { appendFileSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { deadLetterDirectory, FileDeadLetterStore } from "../../src/deadletter/file-store.ts";
import { toRecords } from "../../src/deadletter/record.ts";
import type { DeadLetterRecord } from "../../src/deadletter/types.ts";
import { ManualClock, systemClock } from "../../src/util/clock.ts";
import { entry } from "../support/fakes.ts";
import { tempDir } from "../support/tmp.ts";

const SIGNAL = new AbortController().signal;

function group(clock: ManualClock, lines: string[], reason = "bad_request"): DeadLetterRecord[] {
  clock.advance(1);
  return toRecords(
    {
      entries: lines.map((line, i) =>
        entry("eventlogfile:API", String(i), { line, labels: { source: "eventlogfile", org: "prod" } }),
      ),
      reason,
      detail: `entry for stream '{source="eventlogfile"}' has timestamp too old`,
    },
    clock,
  );
}

test("the directory sits next to the state file: state.json → state-deadletter", () => {
  assert.equal(deadLetterDirectory("/var/lib/sf2loki/state.json"), "/var/lib/sf2loki/state-deadletter");
  assert.equal(deadLetterDirectory("/data/checkpoints"), "/data/checkpoints-deadletter");
});

test("appended letters read back whole, oldest first, with every field of the entry", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  const store = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  const first = group(clock, ["a1", "a2"]);
  const second = group(clock, ["b1"], "oversized_413");
  await store.append(first, SIGNAL);
  const outcome = await store.append(second, SIGNAL);
  assert.equal(outcome.evicted, 0);
  assert.equal(outcome.usage.entries, 3);
  const held = await store.list(SIGNAL);
  assert.deepEqual(held, [...first, ...second]);
  const r = held[0]!;
  assert.equal(r.org, "prod");
  assert.equal(r.checkpoint_key, "eventlogfile:API");
  assert.match(r.timestamp_ns, /^\d{19}$/);
  assert.equal(r.dead_lettered_at, new Date(clock.now() - 1).toISOString());
  assert.match(r.detail, /timestamp too old/);
  assert.equal(new Set(held.map((h) => h.id)).size, 3, "ids are unique");
  // Plain JSON lines on disk.
  const files = readdirSync(dir).filter((n) => n.endsWith(".jsonl"));
  const lines = files.flatMap((f) => readFileSync(join(dir, f), "utf8").trim().split("\n"));
  assert.deepEqual(
    lines.map((l) => (JSON.parse(l) as DeadLetterRecord).line),
    ["a1", "a2", "b1"],
  );
});

test("at its entry bound the store evicts the oldest letters and counts them", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  // 8 entries: segments of one entry each, so eviction is exact here.
  const store = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 8 }, clock);
  const written: DeadLetterRecord[] = [];
  let evicted = 0;
  for (let i = 0; i < 10; i++) {
    const g = group(clock, [`line-${i}`]);
    written.push(...g);
    evicted += (await store.append(g, SIGNAL)).evicted;
  }
  assert.equal(evicted, 2);
  const held = await store.list(SIGNAL);
  assert.deepEqual(
    held.map((r) => r.line),
    written.slice(2).map((r) => r.line),
  );
  assert.deepEqual(store.usage()?.entries, 8);
});

test("at its byte bound whole segments go, oldest first, and the store stays within max_bytes", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  const maxBytes = 8192;
  const store = new FileDeadLetterStore(dir, { maxBytes, maxEntries: 0 }, clock);
  let evicted = 0;
  for (let i = 0; i < 100; i++)
    evicted += (await store.append(group(clock, [`x${i}`.padEnd(200, "x")]), SIGNAL)).evicted;
  const usage = store.usage()!;
  assert.ok(usage.bytes <= maxBytes, `${usage.bytes} bytes held`);
  assert.ok(usage.bytes > (maxBytes * 6) / 8, `${usage.bytes} bytes held: most of the bound is used`);
  const held = await store.list(SIGNAL);
  assert.equal(held.length + evicted, 100);
  assert.equal(held.at(-1)!.line.slice(0, 3), "x99", "the newest is kept");
});

test("rewrite removes and updates exactly what it names and keeps the rest", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  const store = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  const g = group(clock, ["a", "b", "c"]);
  await store.append(g, SIGNAL);
  const updated = { ...g[2]!, detail: "refused again: line too long" };
  const removed = await store.rewrite(new Set([g[0]!.id]), new Map([[updated.id, updated]]), SIGNAL);
  assert.equal(removed, 1);
  assert.deepEqual(await store.list(SIGNAL), [g[1], updated]);
  assert.equal(await store.rewrite(new Set([g[1]!.id, g[2]!.id]), new Map(), SIGNAL), 2);
  assert.deepEqual(await store.list(SIGNAL), []);
  assert.deepEqual(store.usage(), { entries: 0, bytes: 0 });
});

test("a line torn by a crash is skipped, and the next process appends to a new segment", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  const before = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  const g = group(clock, ["kept"]);
  await before.append(g, SIGNAL);
  const [segment] = readdirSync(dir).filter((n) => n.endsWith(".jsonl"));
  appendFileSync(join(dir, segment!), '{"id":"torn","li');
  const after = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  const next = group(clock, ["after the crash"]);
  await after.append(next, SIGNAL);
  assert.deepEqual(
    (await after.list(SIGNAL)).map((r) => r.line),
    ["kept", "after the crash"],
  );
});

test("a rewrite (the CLI) racing appends (the daemon) loses none of the appended letters", async () => {
  const dir = join(tempDir(), "state-deadletter");
  const clock = new ManualClock();
  // Real time for the stores: the lock waits on the other side's file-system work, not on a manual clock.
  const daemon = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, systemClock);
  const operator = new FileDeadLetterStore(dir, { maxBytes: 1 << 20, maxEntries: 0 }, systemClock);
  const old = group(
    clock,
    Array.from({ length: 20 }, (_, i) => `old-${i}`),
  );
  await daemon.append(old, SIGNAL);
  const appended: DeadLetterRecord[] = [];
  const appending = (async () => {
    for (let i = 0; i < 40; i++) {
      const g = group(clock, [`new-${i}`]);
      appended.push(...g);
      await daemon.append(g, SIGNAL);
    }
  })();
  // The operator removes the old letters one at a time while the daemon appends.
  for (const r of old) await operator.rewrite(new Set([r.id]), new Map(), SIGNAL);
  await appending;
  assert.deepEqual(
    (await operator.list(SIGNAL)).map((r) => r.line),
    appended.map((r) => r.line),
  );
});

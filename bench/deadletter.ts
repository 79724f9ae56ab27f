// What keeping a dead letter costs next to pushing the same entries to Loki: a durable append to the
// file dead-letter store (one write and an fdatasync per group) against a push to the simulated Loki
// on loopback, one run, as ratios; and how fast `sf2loki deadletter replay` empties the store. Not
// part of `npm run bench`: dead letters are off the hot path (only refused entries pay it).
//   node bench/deadletter.ts
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { FileDeadLetterStore } from "../src/deadletter/file-store.ts";
import { toRecords } from "../src/deadletter/record.ts";
import { replay } from "../src/deadletter/replay.ts";
import { LogEntry } from "../src/model.ts";
import { startLokiReceiver } from "../src/sim/loki.ts";
import { createLokiSink } from "../src/sinks/loki/sink.ts";
import { validateConfig } from "../src/config/load.ts";
import { systemClock } from "../src/util/clock.ts";

const dir = mkdtempSync(join(tmpdir(), "dlq-measure-"));
const signal = new AbortController().signal;
let ts = BigInt(Date.now() - 3_600_000) * 1_000_000n;
const mk = (i: number) =>
  new LogEntry({
    timestampNs: ts++,
    labels: { source: "eventlogfile", event_type: "API", job: "sf2loki" },
    line: `{"EventIdentifier":"ev-${i}","pad":"${"x".repeat(400)}"}`,
    checkpoint: { key: "eventlogfile:API", value: String(i) },
  });
const store = new FileDeadLetterStore(
  join(dir, "state-deadletter"),
  { maxBytes: 1 << 30, maxEntries: 0 },
  systemClock,
);
const loki = await startLokiReceiver();
const config = validateConfig({
  salesforce: { client_id: "a", username: "u", private_key: "k" },
  sink: { loki: { url: loki.pushUrl } },
});
const sink = createLokiSink(config.sink.loki, { clock: systemClock });

const GROUPS = 200;
let t = performance.now();
for (let g = 0; g < GROUPS; g++)
  await store.append(
    toRecords({ entries: [mk(g)], reason: "bad_request", detail: "d" }, systemClock),
    signal,
  );
const appendOne = (performance.now() - t) / GROUPS;
t = performance.now();
for (let g = 0; g < GROUPS; g++) await sink.push([mk(g)]);
const pushOne = (performance.now() - t) / GROUPS;
t = performance.now();
for (let g = 0; g < 20; g++)
  await store.append(
    toRecords(
      { entries: Array.from({ length: 100 }, (_, i) => mk(i)), reason: "bad_request", detail: "d" },
      systemClock,
    ),
    signal,
  );
const append100 = (performance.now() - t) / 20;
t = performance.now();
for (let g = 0; g < 20; g++) await sink.push(Array.from({ length: 100 }, (_, i) => mk(i)));
const push100 = (performance.now() - t) / 20;
const records = await store.list(signal);
t = performance.now();
const result = await replay({ store, sink, records, clock: systemClock, signal });
const replayMs = performance.now() - t;
console.log(
  JSON.stringify({
    append_1_entry_ms: +appendOne.toFixed(3),
    loki_push_1_entry_ms: +pushOne.toFixed(3),
    ratio_1: +(appendOne / pushOne).toFixed(2),
    append_100_entries_ms: +append100.toFixed(3),
    loki_push_100_entries_ms: +push100.toFixed(3),
    ratio_100: +(append100 / push100).toFixed(2),
    replay_entries: result.delivered,
    replay_ms: Math.round(replayMs),
    replay_entries_per_s: Math.round(result.delivered / (replayMs / 1000)),
    left: (await store.list(signal)).length,
  }),
);
await sink.close();
await loki.stop();
rmSync(dir, { recursive: true, force: true });

// replay() on its own, with a scripted sink and a manual clock: a Loki that keeps failing ends the
// replay with what was delivered before removed and the rest kept; a budget drop keeps letters as
// they were; the progress callback sees every batch.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { FileDeadLetterStore } from "../../src/deadletter/file-store.ts";
import { toRecords } from "../../src/deadletter/record.ts";
import { DeadLetterReplayError, replay, type ReplayProgress } from "../../src/deadletter/replay.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { entry, FakeSink } from "../support/fakes.ts";
import { tempDir } from "../support/tmp.ts";

const SIGNAL = new AbortController().signal;

async function filled(n: number): Promise<{ store: FileDeadLetterStore; clock: ManualClock }> {
  const clock = new ManualClock();
  const store = new FileDeadLetterStore(join(tempDir(), "d"), { maxBytes: 1 << 20, maxEntries: 0 }, clock);
  const entries = Array.from({ length: n }, (_, i) => entry("apexlog", String(i), { line: `line-${i}` }));
  await store.append(toRecords({ entries, reason: "bad_request", detail: "old" }, clock), SIGNAL);
  return { store, clock };
}

test("a Loki that keeps failing ends the replay: earlier batches are removed, the failing one and the rest kept", async () => {
  const { store, clock } = await filled(5);
  const sink = new FakeSink();
  sink.script({ ok: { dropped: [] } }, ...Array.from({ length: 5 }, () => ({ retryable: undefined })));
  const progress: ReplayProgress[] = [];
  await assert.rejects(
    replay({
      store,
      sink,
      records: await store.list(SIGNAL),
      clock,
      signal: SIGNAL,
      batchSize: 2,
      onBatch: (p) => progress.push(p),
    }),
    (err: unknown) => {
      assert.ok(err instanceof DeadLetterReplayError);
      assert.match(
        err.message,
        /after 5 attempts .* 2 delivered so far were removed from the store, the rest are kept/,
      );
      return true;
    },
  );
  assert.equal(sink.calls.length, 6, "one good push, then 5 attempts of the second batch");
  assert.deepEqual(
    progress.map((p) => p.delivered),
    [2],
  );
  assert.deepEqual(
    (await store.list(SIGNAL)).map((r) => r.line),
    ["line-2", "line-3", "line-4"],
  );
});

test("refused again keeps the letter with the new words; a budget drop keeps it unchanged", async () => {
  const { store, clock } = await filled(3);
  const records = await store.list(SIGNAL);
  const sink = new FakeSink();
  // The sink reports the very entries it was handed, as the Loki sink does.
  const original = sink.push.bind(sink);
  sink.push = async (batch, signal) => {
    const result = original(batch, signal);
    await result;
    return {
      dropped: [
        { entries: [batch[0]!], reason: "oversized_413", detail: "line too long (300000 > 262144)" },
        { entries: [batch[1]!], reason: "budget" },
      ],
    };
  };
  const result = await replay({ store, sink, records, clock, signal: SIGNAL });
  assert.deepEqual(
    { delivered: result.delivered, refused: result.refused, held: result.held },
    { delivered: 1, refused: 1, held: 1 },
  );
  const left = await store.list(SIGNAL);
  assert.deepEqual(
    left.map((r) => [r.line, r.reason, r.detail]),
    [
      ["line-0", "oversized_413", "line too long (300000 > 262144)"],
      ["line-1", "bad_request", "old"],
    ],
  );
});

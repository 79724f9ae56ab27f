// The pipeline's hook into the dead-letter seam: what Loki refused for good is handed over with
// Loki's words, budget drops are not, and the checkpoint waits for the hand-over.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { DeadLetterGroup, DeadLetterSink } from "../../src/pipeline/dead-letters.ts";
import { entry, ScriptedSource, settle } from "../support/fakes.ts";
import { harness } from "./harness.ts";

const KEY = "eventlogfile:API";

class RecordingDeadLetters implements DeadLetterSink {
  readonly kept: DeadLetterGroup[] = [];
  #gate: Promise<unknown> | undefined;
  #open: (() => void) | undefined;

  hold(): void {
    const { promise, resolve } = Promise.withResolvers<undefined>();
    this.#gate = promise;
    this.#open = () => {
      resolve(undefined);
    };
  }

  release(): void {
    this.#open?.();
  }

  async keep(group: DeadLetterGroup): Promise<void> {
    await this.#gate;
    this.kept.push(group);
  }
}

test("entries refused inside a delivered batch are handed over with Loki's words; budget drops are not", async () => {
  const [a, b, c] = [entry(KEY, "1"), entry(KEY, "2"), entry(KEY, "3")];
  const dead = new RecordingDeadLetters();
  const h = harness([new ScriptedSource("eventlogfile", [a, b, c])], { deadLetters: dead });
  h.sink.script({
    ok: {
      dropped: [
        { entries: [b], reason: "bad_request", detail: "entry too far behind" },
        { entries: [c], reason: "budget" },
      ],
    },
  });
  await h.pipeline.run(new AbortController().signal);
  assert.deepEqual(
    dead.kept.map((g) => [g.reason, g.detail, g.entries]),
    [["bad_request", "entry too far behind", [b]]],
  );
  assert.equal(h.store.doc.get(KEY), "3");
  assert.equal(await h.metric("sf2loki_loki_entries_dropped"), 2, "still counted as drops");
});

test("a batch refused whole is handed over with the refusal's message", async () => {
  const items = [entry(KEY, "1"), entry(KEY, "2")];
  const dead = new RecordingDeadLetters();
  const h = harness([new ScriptedSource("eventlogfile", items)], { deadLetters: dead });
  h.sink.script({ permanent: "oversized_413" });
  await h.pipeline.run(new AbortController().signal);
  assert.equal(dead.kept.length, 1);
  assert.equal(dead.kept[0]!.reason, "oversized_413");
  assert.equal(dead.kept[0]!.detail, "loki answered 400");
  assert.deepEqual(dead.kept[0]!.entries, items);
  assert.equal(h.store.doc.get(KEY), "2");
});

test("the checkpoint moves past dead letters only once they were kept", async () => {
  const items = [entry(KEY, "1"), entry(KEY, "2")];
  const dead = new RecordingDeadLetters();
  dead.hold();
  const h = harness([new ScriptedSource("eventlogfile", items)], { deadLetters: dead });
  h.sink.script({ ok: { dropped: [{ entries: [items[1]!], reason: "bad_request", detail: "bad" }] } });
  const running = h.pipeline.run(new AbortController().signal);
  for (let i = 0; i < 20 && h.sink.calls.length === 0; i++) {
    h.clock.advance(250);
    await settle();
  }
  await settle(50);
  assert.equal(h.sink.calls.length, 1);
  assert.equal(h.store.doc.get(KEY), undefined, "no commit while the dead letters are being written");
  dead.release();
  await running;
  assert.equal(h.store.doc.get(KEY), "2");
  assert.equal(dead.kept.length, 1);
});

test("a run torn down while dead letters are being kept abandons the batch: no commit past them", async () => {
  const items = [entry(KEY, "1"), entry(KEY, "2")];
  const dead = new RecordingDeadLetters();
  dead.hold();
  const h = harness([new ScriptedSource("eventlogfile", items, { after: "wait-stop" })], {
    deadLetters: dead,
    graceMs: 1000,
  });
  h.sink.script({ ok: { dropped: [{ entries: [items[1]!], reason: "bad_request", detail: "bad" }] } });
  const stop = new AbortController();
  const running = h.pipeline.run(stop.signal);
  for (let i = 0; i < 20 && h.sink.calls.length === 0; i++) {
    h.clock.advance(250);
    await settle();
  }
  assert.equal(h.sink.calls.length, 1);
  stop.abort();
  // The grace runs out with the write still hanging: the run is cancelled.
  for (let i = 0; i < 10; i++) {
    h.clock.advance(1000);
    await settle();
  }
  dead.release();
  await running;
  assert.equal(h.store.doc.get(KEY), undefined, "nothing committed past entries that may not have been kept");
});

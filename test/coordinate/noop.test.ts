import assert from "node:assert/strict";
import { describe, it } from "node:test";
import { NoopCoordinator } from "../../src/coordinate/noop.ts";

describe("noop coordinator", () => {
  it("leads at once, awaits onAcquire, returns on stop without onLose, and never fences", async () => {
    const c = new NoopCoordinator();
    const ctl = new AbortController();
    const events: string[] = [];
    let release!: () => void;
    const acquiring = new Promise<void>((r) => (release = r));
    let returned = false;
    const done = c
      .run({
        onAcquire: async () => {
          events.push(`acquire leader=${c.isLeader}`);
          await acquiring;
          events.push("acquired");
        },
        onLose: () => {
          events.push("lose");
          return Promise.resolve();
        },
        signal: ctl.signal,
      })
      .then(() => (returned = true));
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(events, ["acquire leader=true"]);
    release();
    await new Promise((r) => setImmediate(r));
    assert.equal(returned, false, "keeps running until the stop");
    c.checkFence();
    ctl.abort();
    await done;
    assert.deepEqual(events, ["acquire leader=true", "acquired"]);
    assert.equal(c.holder, undefined);
    assert.equal(c.epoch, undefined);
    c.checkFence();
  });
});

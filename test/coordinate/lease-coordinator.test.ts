// The loop's own glue, over an in-memory backend: callback failures, and the fence message.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import type {
  LeaseBackend,
  LeaseRecord,
  LeaseSnapshot,
  LeaseWriteResult,
} from "../../src/coordinate/lease/backend.ts";
import { LeaseCoordinator } from "../../src/coordinate/lease/coordinator.ts";
import { ManualClock } from "../../src/util/clock.ts";

class MemoryBackend implements LeaseBackend {
  readonly kind = "memory";
  readonly where = "mem://lease";
  readonly confirmDelayMs = 0;
  stored: { record: LeaseRecord; version: string } | undefined;
  #n = 0;

  read(): Promise<LeaseSnapshot | undefined> {
    return Promise.resolve(this.stored && { ...this.stored });
  }

  write(record: LeaseRecord, expected: string | undefined): Promise<LeaseWriteResult> {
    if (this.stored?.version !== expected) return Promise.resolve({ ok: false });
    this.stored = { record, version: String(++this.#n) };
    return Promise.resolve({ ok: true, version: this.stored.version });
  }
}

function coordinator(backend: MemoryBackend): LeaseCoordinator {
  return new LeaseCoordinator({
    backend,
    identity: "me",
    ttlMs: 30_000,
    renewIntervalMs: 10_000,
    clock: new ManualClock({ auto: false }),
  });
}

describe("LeaseCoordinator callbacks", () => {
  it("pairs a failing onAcquire with onLose, releases the lease, and rethrows", async () => {
    const backend = new MemoryBackend();
    const c = coordinator(backend);
    const events: string[] = [];
    await assert.rejects(
      c.run({
        onAcquire: () => {
          events.push("+");
          return Promise.reject(new Error("pipeline failed to start"));
        },
        onLose: () => {
          events.push("-");
          return Promise.resolve();
        },
        signal: new AbortController().signal,
      }),
      /pipeline failed to start/,
    );
    assert.deepEqual(events, ["+", "-"]);
    assert.equal(backend.stored?.record.holder, "");
    assert.equal(backend.stored.record.epoch, 1);
    assert.equal(c.isLeader, false);
  });

  it("stays leader while onLose drains after a stop, then releases", async () => {
    const backend = new MemoryBackend();
    const c = coordinator(backend);
    const ctl = new AbortController();
    const seen: boolean[] = [];
    await c.run({
      onAcquire: () => {
        ctl.abort();
        return Promise.resolve();
      },
      onLose: () => {
        seen.push(c.isLeader);
        c.checkFence(); // the drain may still commit its last checkpoints
        return Promise.resolve();
      },
      signal: ctl.signal,
    });
    assert.deepEqual(seen, [true]);
    assert.equal(backend.stored?.record.holder, "");
    assert.throws(
      () => {
        c.checkFence();
      },
      (err: Error & { code?: string }) =>
        err.code === "SF2LOKI_STATE_FENCED" &&
        err.message ===
          "refusing checkpoint commit; me does not hold the lease mem://lease (leadership lost); " +
            "the new leader owns the checkpoints now",
    );
  });
});

/** A backend whose claim write is answered only after the test says so (a stop lands meanwhile). */
class SlowClaimBackend extends MemoryBackend {
  #gate: Promise<void> | undefined;
  readonly #open: () => void;
  writeStarted: Promise<void>;
  #started!: () => void;
  readonly lands: boolean;

  constructor(lands: boolean) {
    super();
    this.lands = lands;
    this.writeStarted = new Promise((resolve) => (this.#started = resolve));
    let open!: () => void;
    this.#gate = new Promise<void>((resolve) => (open = resolve));
    this.#open = open;
  }

  answer(): void {
    this.#open();
  }

  override async write(record: LeaseRecord, expected: string | undefined): Promise<LeaseWriteResult> {
    const gate = this.#gate;
    if (!gate) return super.write(record, expected);
    this.#gate = undefined;
    this.#started();
    // The server applies the claim; the answer reaches us only after the stop.
    const result = await super.write(record, expected);
    await gate;
    if (!this.lands) throw new Error("socket hang up");
    return result;
  }
}

describe("LeaseCoordinator stopped mid-claim", () => {
  for (const lands of [true, false]) {
    it(`releases a claim that landed while the stop came (${lands ? "answered" : "answer lost"})`, async () => {
      const backend = new SlowClaimBackend(lands);
      const c = coordinator(backend);
      const stop = new AbortController();
      let acquired = false;
      const run = c.run({
        onAcquire: () => {
          acquired = true;
          return Promise.resolve();
        },
        onLose: () => Promise.resolve(),
        signal: stop.signal,
      });
      await backend.writeStarted;
      stop.abort();
      backend.answer();
      await run;
      assert.equal(acquired, false, "a stopped replica starts no term");
      assert.equal(
        backend.stored?.record.holder,
        "",
        "the claim that landed is released, not left for a ttl",
      );
      assert.equal(backend.stored.record.epoch, 1);
      assert.equal(c.isLeader, false);
    });
  }
});

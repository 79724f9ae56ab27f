// The object-store behaviour both backends must show, written once and run against S3 and GCS with the
// real SDK clients over loopback. The lost-acknowledgement cases are defect #129, the mid-body and
// corrupt-document cases defect #130 (../shared/seeds/).
import assert from "node:assert/strict";
import { test } from "node:test";
import { Sf2LokiError } from "../../src/errors.ts";
import {
  StateAccessDeniedError,
  StateFenceError,
  StateObjectCorruptError,
  StateStoreConflictError,
} from "../../src/state/errors.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { testFence } from "../support/fakes.ts";
import { faults } from "../support/object-store-emulator.ts";
import { captureLogger } from "./helpers/capture-logger.ts";
import type { HarnessFactory, ObjectStoreHarness } from "./helpers/object-store-harness.ts";

const RECOVERED = /applied-but-unacknowledged/;

/** What each backend's access-denied message must tell the operator to grant. */
const PERMISSION = {
  s3: /s3:ListBucket/,
  gcs: /storage\.objects\.delete/,
  azure: /Storage Blob Data Contributor role .* on that container/,
};

/** Request indexes of the emulator's recorded writes and reads, in arrival order. */
function timeline(h: ObjectStoreHarness): string[] {
  return h.emulator.requests.map((r) => (h.writes(r) ? "W" : h.reads(r) ? "R" : "?"));
}

function writesSince(h: ObjectStoreHarness, from: number) {
  return h.emulator.requests.slice(from).filter(h.writes);
}

async function seeded(h: ObjectStoreHarness, doc: Record<string, string>) {
  h.thirdPartyWrite(JSON.stringify(doc));
  const log = captureLogger();
  const store = h.store({ logger: log.logger });
  await store.load("warm-up");
  return { store, log, mark: h.emulator.requests.length };
}

export function objectStoreCases(makeHarness: HarnessFactory): void {
  for (const [name, fault] of [
    ["applied-then-500", faults.appliedThen500],
    ["applied-then-reset", faults.appliedThenReset],
  ] as const) {
    test(`${name} on an update: commit succeeds, WARN, and the CAS token is re-synced`, async (t) => {
      const h = await makeHarness(t);
      const { store, log, mark } = await seeded(h, { k1: "v1" });
      h.emulator.inject(h.writes, fault());

      await store.commit("k2", "v2");
      assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
      const warning = log.warnings().find((l) => RECOVERED.test(l.msg));
      assert.ok(warning, "the recovered lost acknowledgement is logged at WARN");
      // PUT (applied, ack lost) -> PUT (412) -> one verification GET.
      assert.deepEqual(timeline(h).slice(mark), ["W", "W", "R"]);

      const recoveredToken = h.storedToken();
      const beforeNext = h.emulator.requests.length;
      await store.commit("k3", "v3");
      assert.deepEqual(h.stored(), { k1: "v1", k2: "v2", k3: "v3" });
      const next = writesSince(h, beforeNext);
      assert.equal(next.length, 1, "one PUT, accepted first time");
      assert.equal(h.preconditionOf(next[0]!), recoveredToken, "it names the adopted token");
    });

    test(`${name} on the very first write of a new object: commit succeeds and the next one too`, async (t) => {
      const h = await makeHarness(t);
      const store = h.store();
      assert.equal(await store.load("k1"), undefined);
      h.emulator.inject(h.writes, fault());

      await store.commit("k1", "v1");
      const [first, retry] = writesSince(h, 0);
      assert.equal(h.preconditionOf(first!), "create");
      assert.equal(h.preconditionOf(retry!), "create", "the retry re-sends the create-only precondition");
      assert.deepEqual(h.stored(), { k1: "v1" });

      await store.commit("k2", "v2");
      assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
    });
  }

  test("a 412 on the first attempt is an immediate conflict, with no GET after the PUT", async (t) => {
    const h = await makeHarness(t);
    const { store, log, mark } = await seeded(h, { k1: "v1" });
    h.thirdPartyWrite(JSON.stringify({ k1: "other" }));

    const err = await store.commit("k2", "v2").then(
      () => assert.fail("expected a conflict"),
      (e: unknown) => e,
    );
    assert.ok(err instanceof StateStoreConflictError);
    assert.equal(err.code, "SF2LOKI_STATE_CONFLICT");
    assert.match(err.message, new RegExp(escape(h.location)));
    assert.match(err.message, /compare-and-swap/);
    assert.deepEqual(timeline(h).slice(mark), ["W"], "one PUT, no verification GET");
    assert.deepEqual(h.stored(), { k1: "other" });
    assert.equal(log.warnings().filter((l) => RECOVERED.test(l.msg)).length, 0);
  });

  test("applied-then-500 followed by a third-party write before the retry: conflict", async (t) => {
    const h = await makeHarness(t);
    const { store, mark } = await seeded(h, { k1: "v1" });
    h.emulator.inject(h.writes, faults.appliedThen500());
    h.emulator.inject(h.writes, h.otherWriterFirst({ k1: "theirs" }));

    await assert.rejects(store.commit("k2", "v2"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /did not write/);
      return true;
    });
    assert.deepEqual(timeline(h).slice(mark), ["W", "W", "R"]);
    assert.deepEqual(h.stored(), { k1: "theirs" }, "the other writer's document is left alone");
  });

  test("lost acknowledgement on delete: the delete succeeds and the next commit too", async (t) => {
    const h = await makeHarness(t);
    const { store, log } = await seeded(h, { k1: "v1", k2: "v2" });
    h.emulator.inject(h.writes, faults.appliedThenReset());

    await store.delete("k1");
    assert.deepEqual(h.stored(), { k2: "v2" });
    assert.ok(log.warnings().some((l) => RECOVERED.test(l.msg)));
    assert.equal(await store.load("k1"), undefined);

    await store.commit("k3", "v3");
    assert.deepEqual(h.stored(), { k2: "v2", k3: "v3" });
  });

  test("lost acknowledgement on delete with a third-party write before the retry: conflict", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1", k2: "v2" });
    h.emulator.inject(h.writes, faults.appliedThen500());
    h.emulator.inject(h.writes, h.otherWriterFirst({ k9: "theirs" }));

    await assert.rejects(store.delete("k1"), StateStoreConflictError);
    assert.deepEqual(h.stored(), { k9: "theirs" });
  });

  test("a lost acknowledgement followed by someone deleting the object: conflict naming the deletion", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1" });
    h.emulator.inject(h.writes, faults.appliedThen500());
    h.emulator.inject(h.writes, h.otherDeleterFirst());
    await assert.rejects(store.commit("k2", "v2"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /deleted by someone else/);
      return true;
    });
    assert.equal(h.stored(), undefined);
  });

  test("a lost acknowledgement whose verification read keeps failing is a conflict that accuses no one", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1" });
    h.emulator.inject(h.writes, faults.appliedThen500());
    h.emulator.inject(h.reads, faults.internalError(), Infinity);

    await assert.rejects(store.commit("k2", "v2"), (e: unknown) => {
      assert.ok(e instanceof StateStoreConflictError);
      assert.match(e.message, /could not be confirmed/);
      assert.doesNotMatch(e.message, /another sf2loki instance/);
      return true;
    });
  });

  test("the verification read is itself blip-tolerant", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1" });
    h.emulator.inject(h.writes, faults.appliedThen500());
    h.emulator.inject(h.reads, faults.slowDown());

    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
  });

  test("a body cut mid-transfer once: the load re-issues the GET and succeeds", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v".repeat(4096) }));
    h.emulator.inject(h.reads, faults.cutBody());

    assert.equal(await h.store().load("k1"), "v".repeat(4096));
    assert.equal(h.emulator.count(h.reads), 2);
  });

  test("a body cut on every attempt: the original error surfaces after 4 attempts", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v".repeat(4096) }));
    h.emulator.inject(h.reads, faults.cutBody(), Infinity);

    await assert.rejects(h.store().load("k1"), (e: unknown) => {
      assert.ok(e instanceof Error);
      assert.ok(!(e instanceof Sf2LokiError), "the raw transport error, not a wrapper");
      return true;
    });
    assert.equal(h.emulator.count(h.reads), 4);
    assert.equal(h.clock.sleeps.length, 3);
  });

  for (const [what, body, problem] of [
    ["truncated JSON", '{"k1": "v1"', /invalid JSON/],
    ["invalid UTF-8", Buffer.from([0xff, 0xfe, 0x7b, 0x7d]), /UTF-8/],
    ["a JSON array", "[1, 2]", /array, not an object/],
    ["a non-string value", '{"k1": 5}', /"k1" is a JSON number/],
  ] as const) {
    test(`${what} is a StateObjectCorruptError naming the object, not retried`, async (t) => {
      const h = await makeHarness(t);
      h.thirdPartyWrite(body as string);
      await assert.rejects(h.store().load("k1"), (e: unknown) => {
        assert.ok(e instanceof StateObjectCorruptError);
        assert.equal(e.code, "SF2LOKI_STATE_OBJECT_CORRUPT");
        assert.match(e.message, new RegExp(escape(h.location)));
        assert.match(e.message, problem);
        assert.match(e.message, /remove it/);
        return true;
      });
      assert.equal(h.emulator.count(h.reads), 1);
    });
  }

  for (const [name, fault] of [
    ["503 SlowDown", faults.slowDown],
    ["429", faults.tooManyRequests],
  ] as const) {
    test(`a ${name} on a PUT is retried`, async (t) => {
      const h = await makeHarness(t);
      const { store, mark } = await seeded(h, { k1: "v1" });
      h.emulator.inject(h.writes, fault(), 2);
      await store.commit("k2", "v2");
      assert.equal(writesSince(h, mark).length, 3);
      assert.deepEqual(h.stored(), { k1: "v1", k2: "v2" });
      const backoffs = h.clock.sleeps;
      assert.equal(backoffs.length, 2);
      assert.ok(
        backoffs.every((ms) => ms >= 100 && ms <= 2000),
        `jittered backoff in range: ${backoffs.join(", ")}`,
      );
    });
  }

  test("a permanent 503 surfaces the original error after 4 PUTs", async (t) => {
    const h = await makeHarness(t);
    const { store, mark } = await seeded(h, { k1: "v1" });
    h.emulator.inject(h.writes, faults.slowDown(), Infinity);
    await assert.rejects(
      store.commit("k2", "v2"),
      (e: unknown) => e instanceof Error && !(e instanceof Sf2LokiError),
    );
    assert.equal(writesSince(h, mark).length, 4);
    assert.deepEqual(h.stored(), { k1: "v1" });
  });

  test("close() cancels a retry that is waiting out its backoff", async (t) => {
    const h = await makeHarness(t);
    const clock = new ManualClock({ auto: false });
    const store = h.store({ clock });
    h.emulator.inject(h.writes, faults.slowDown(), Infinity);
    const pending = store.commit("k1", "v1");
    // Bounded: a commit that ends without ever backing off (the server gone) fails here, never spins.
    const commit = { ended: false };
    pending.then(
      () => (commit.ended = true),
      () => (commit.ended = true),
    );
    const deadline = performance.now() + 10_000;
    while (clock.sleeps.length === 0) {
      if (commit.ended) assert.fail("the commit ended before any retry backoff");
      if (performance.now() > deadline) assert.fail("no retry backoff within 10 s");
      await new Promise((r) => setImmediate(r));
    }
    await store.close();
    await assert.rejects(
      pending,
      (e: unknown) => e instanceof Sf2LokiError && e.code === "SF2LOKI_STATE_CLOSED",
    );
    assert.equal(h.emulator.count(h.writes), 1, "no attempt after the cancellation");
  });

  test("a 500 on the GET is retried and the load succeeds", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v1" }));
    h.emulator.inject(h.reads, faults.internalError());
    assert.equal(await h.store().load("k1"), "v1");
    assert.equal(h.emulator.count(h.reads), 2);
  });

  test("403 is a StateAccessDeniedError naming the permissions, not retried", async (t) => {
    const h = await makeHarness(t);
    h.emulator.inject(h.reads, { kind: "error", status: 403, code: "AccessDenied" });
    await assert.rejects(h.store().load("k1"), (e: unknown) => {
      assert.ok(e instanceof StateAccessDeniedError);
      assert.match(e.message, new RegExp(escape(h.location)));
      assert.match(e.message, PERMISSION[h.backend]);
      return true;
    });
    assert.equal(h.emulator.count(h.reads), 1);
  });

  test("never two PUTs in flight: 20 concurrent commits on one store", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    h.emulator.inject(h.writes, faults.latency(2), Infinity);
    await Promise.all(Array.from({ length: 20 }, (_, i) => store.commit(`k${i}`, `v${i}`)));
    assert.equal(h.emulator.maxConcurrentWrites, 1);
    assert.equal(Object.keys(h.stored()!).length, 20);
    assert.equal(h.emulator.count(h.writes), 20);
  });

  test("commitMany is exactly one PUT; deleting an absent key is none", async (t) => {
    const h = await makeHarness(t);
    const { store, mark } = await seeded(h, { k1: "v1" });
    await store.commitMany({ a: "1", b: "2", c: "3" });
    assert.equal(writesSince(h, mark).length, 1);
    assert.deepEqual(h.stored(), { k1: "v1", a: "1", b: "2", c: "3" });
    await store.delete("absent");
    assert.equal(writesSince(h, mark).length, 1);
    assert.deepEqual(timeline(h).slice(mark), ["W"], "no GET either: the cache answered");
  });

  test("load reads once; reset() forces a fresh GET and clears a stale CAS token", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v1" }));
    const store = h.store();
    assert.equal(await store.load("k1"), "v1");
    assert.equal(await store.load("k1"), "v1");
    assert.equal(h.emulator.count(h.reads), 1);

    h.thirdPartyWrite(JSON.stringify({ k1: "newer" }));
    store.reset();
    store.reset();
    assert.equal(await store.load("k1"), "newer");
    assert.equal(h.emulator.count(h.reads), 2);
    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "newer", k2: "v2" });
  });

  test("a missing object loads as empty; load of an Object.prototype name finds nothing", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    assert.equal(await store.load("k1"), undefined);
    assert.equal(await store.load("constructor"), undefined);
    assert.deepEqual(await store.snapshot(), {});
  });

  test("the fence runs first: a throwing fence means no request at all", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    store.setFence(
      testFence({
        check: () => {
          throw new Sf2LokiError("SF2LOKI_STATE_FENCED", "not the leader");
        },
      }),
    );
    await assert.rejects(store.commit("k1", "v1"), /not the leader/);
    await assert.rejects(store.delete("k1"), /not the leader/);
    assert.equal(h.emulator.requests.length, 0);
    store.setFence(undefined);
    await store.commit("k1", "v1");
    assert.deepEqual(h.stored(), { k1: "v1" });
  });

  // ---- HA fencing (#17): the term is visible in the document and checked on every attempt ----------

  test("a fenced write stamps its epoch; a newer term's claim turns the old leader's next write into a fence, not a conflict", async (t) => {
    const h = await makeHarness(t);
    const old = h.store();
    old.setFence(testFence({ epoch: () => 1 }));
    await old.commit("k1", "v1");
    assert.deepEqual(h.stored(), { k1: "v1", __fence_epoch__: "1" });

    const next = h.store();
    next.setFence(testFence({ epoch: () => 2 }));
    await next.claimTerm();
    assert.deepEqual(h.stored(), { k1: "v1", __fence_epoch__: "2" }, "the claim keeps every checkpoint");

    const mark = h.emulator.requests.length;
    await assert.rejects(old.commit("k1", "stale"), (e: unknown) => {
      assert.ok(e instanceof StateFenceError, `expected a fence, got ${String(e)}`);
      assert.match(e.message, /epoch 1\) was superseded by epoch 2/);
      assert.doesNotMatch(e.message, /second sf2loki instance/);
      return true;
    });
    assert.equal(writesSince(h, mark).length, 1, "one refused PUT, no retry");
    assert.deepEqual(h.stored(), { k1: "v1", __fence_epoch__: "2" });
    await next.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "v1", __fence_epoch__: "2", k2: "v2" });
  });

  test("the fence is checked before every attempt: a retry after the term ended is never sent", async (t) => {
    const h = await makeHarness(t);
    const { store, mark } = await seeded(h, { k1: "v1" });
    let leader = true;
    store.setFence(
      testFence({
        epoch: () => 1,
        check: () => {
          if (!leader) throw new StateFenceError("lease lost");
        },
      }),
    );
    // The first PUT is applied but its answer is lost (the partitioned leader's "socket hang up"), and
    // the term ends while it is out.
    const endsTheTerm = (req: Parameters<typeof h.writes>[0]): boolean => {
      if (!h.writes(req)) return false;
      leader = false;
      return true;
    };
    h.emulator.inject(endsTheTerm, faults.appliedThenReset());
    await assert.rejects(store.commit("k2", "v2"), /lease lost/);
    assert.equal(writesSince(h, mark).length, 1, "only the first attempt went out");
  });

  test("the term signal aborts a write still in flight: it ends at once as a fence", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1" });
    const term = new AbortController();
    store.setFence(testFence({ epoch: () => 1, signal: term.signal }));
    h.emulator.inject(h.writes, faults.latency(5000));
    const started = Date.now();
    const commit = store.commit("k2", "v2");
    setTimeout(() => {
      term.abort(new StateFenceError("lease lost"));
    }, 50);
    await assert.rejects(commit, StateFenceError);
    assert.ok(Date.now() - started < 2000, `took ${Date.now() - started} ms`);
  });

  test("a term claim re-reads and retries when the outgoing leader's write slips in between", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v1", __fence_epoch__: "1" }));
    const store = h.store();
    store.setFence(testFence({ epoch: () => 2 }));
    h.emulator.inject(h.writes, h.otherWriterFirst({ k1: "v1-late", __fence_epoch__: "1" }));
    await store.claimTerm();
    assert.deepEqual(
      h.stored(),
      { k1: "v1-late", __fence_epoch__: "2" },
      "the late write kept, then stamped",
    );
  });

  test("a term claim over a newer stored epoch is a fence, and writes nothing", async (t) => {
    const h = await makeHarness(t);
    h.thirdPartyWrite(JSON.stringify({ k1: "v1", __fence_epoch__: "7" }));
    const store = h.store();
    store.setFence(testFence({ epoch: () => 3 }));
    await assert.rejects(store.claimTerm(), /epoch 3\) was superseded by epoch 7/);
    assert.equal(h.emulator.requests.filter(h.writes).length, 0);
    assert.equal(await store.readFenceEpoch(), 7);
  });

  test("without a fence a claim writes nothing and commits stamp no epoch", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    await store.claimTerm();
    await store.commit("k1", "v1");
    assert.deepEqual(h.stored(), { k1: "v1" });
  });

  test("snapshot reads fresh and hides reserved keys", async (t) => {
    const h = await makeHarness(t);
    const { store } = await seeded(h, { k1: "v1", __fence_epoch__: "3" });
    h.thirdPartyWrite(JSON.stringify({ k1: "v2", __fence_epoch__: "3" }));
    assert.deepEqual(await store.snapshot(), { k1: "v2" });
    await store.commit("k2", "v2");
    assert.deepEqual(h.stored(), { k1: "v2", __fence_epoch__: "3", k2: "v2" });
  });

  test("each write names the token of the version it replaces", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    await store.commit("k1", "v1");
    const afterFirst = h.storedToken();
    await store.commit("k2", "v2");
    const [first, second] = writesSince(h, 0);
    assert.equal(h.preconditionOf(first!), "create");
    assert.equal(h.preconditionOf(second!), afterFirst, "the token exactly as returned");
  });

  test("close() is idempotent and a closed store reopens lazily", async (t) => {
    const h = await makeHarness(t);
    const store = h.store();
    await store.close();
    await store.commit("k1", "v1");
    await store.close();
    await store.close();
    assert.deepEqual(h.stored(), { k1: "v1" });
  });
}

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

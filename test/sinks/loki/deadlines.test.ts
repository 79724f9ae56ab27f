// Every Loki push ends (#17): a keep-alive connection that died silently costs one response deadline,
// then the attempt is retried on a fresh connection; a blackhole that never heals ends in
// RetryableSinkError (the pipeline keeps the batch), never a hang. The real undici Pool goes through
// a fault proxy in front of the simulated Loki receiver.
import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { describe, test, type TestContext } from "node:test";
import { startLokiReceiver, PUSH_PATH } from "../../../src/sim/loki.ts";
import { LOKI_DEADLINES, type LokiDeadlines } from "../../../src/sinks/loki/service.ts";
import { createLokiSink } from "../../../src/sinks/loki/sink.ts";
import { RetryableSinkError } from "../../../src/sinks/sink.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { TcpFaultProxy } from "../../support/tcp-fault-proxy.ts";
import { failureOf, idle, timed } from "../../support/timing.ts";
import { entries, entry, settings } from "./support.ts";

const SHORT = 300;
// undici runs headersTimeout on its coarse timer (ticks of ~0.5 s), so a deadline fires up to ~1 s late.
const TIMER_SLACK = 1_000;

async function rig(t: TestContext, deadlines: LokiDeadlines = { connectMs: 5_000, responseMs: SHORT }) {
  const receiver = await startLokiReceiver();
  const proxy = await TcpFaultProxy.start(receiver.pushUrl);
  const clock = new ManualClock();
  const sink = createLokiSink(settings(proxy.url + PUSH_PATH, { encoding: "json", compression: "none" }), {
    clock,
    deadlines,
  });
  t.after(async () => {
    await sink.close();
    await proxy.close();
    await receiver.stop();
  });
  /** One push, then a moment for undici to return the socket to the pool, so the next push reuses it. */
  const warm = async (): Promise<void> => {
    await sink.push(entries(1, 1000));
    await idle();
  };
  return { receiver, proxy, sink, clock, warm };
}

describe("Loki push deadlines", { timeout: 15_000 }, () => {
  test("defaults are sane: connect 10 s, response 30 s", () => {
    assert.deepEqual({ ...LOKI_DEADLINES }, { connectMs: 10_000, responseMs: 30_000 });
  });

  test("a push on a dead keep-alive connection times out once and the retry lands on a fresh one", async (t) => {
    const r = await rig(t);
    await r.warm();
    assert.equal(r.proxy.stats.accepted, 1);

    r.proxy.blackhole();
    r.proxy.heal(); // the kept-alive connection is dead for good
    const ms = await timed(() => r.sink.push(entries(3)));

    assert.equal(r.receiver.counts.unique, 4);
    assert.equal(r.proxy.stats.accepted, 2, "the retry opened a fresh connection");
    assert.equal(r.proxy.stats.open, 1, "undici dropped the dead socket");
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + TIMER_SLACK + 500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive connection → retried after ${ms.toFixed(0)} ms`);
  });

  test("a 4 MiB body stuck in a dead connection's buffers ends the same way", async (t) => {
    const r = await rig(t);
    await r.warm();
    r.proxy.blackhole();
    r.proxy.heal();
    // Incompressible and larger than the loopback socket buffers, so the body write itself stalls.
    const big = Array.from({ length: 64 }, (_, i) =>
      entry(100 + i, { line: randomBytes(48 * 1024).toString("base64") }),
    );
    const ms = await timed(() => r.sink.push(big));
    assert.equal(r.receiver.counts.unique, 65);
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.ok(ms < SHORT + TIMER_SLACK + 1500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`4 MiB push on a dead connection → retried after ${ms.toFixed(0)} ms`);
  });

  test("a blackhole that never heals ends in RetryableSinkError after 5 attempts, never a hang", async (t) => {
    const r = await rig(t);
    await r.warm();
    r.proxy.blackhole();
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(r.sink.push(entries(2)));
    });
    assert.ok(caught instanceof RetryableSinkError, `retryable: ${String(caught)}`);
    assert.match(caught.message, /after 5 attempts \(last: transport error: Headers Timeout Error\)/);
    assert.equal(r.proxy.stats.accepted, 5, "every attempt after the first on a fresh connection");
    assert.equal(r.receiver.counts.unique, 1);
    assert.ok(ms < 5 * (SHORT + TIMER_SLACK) + 1000, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`5 silent attempts → RetryableSinkError after ${ms.toFixed(0)} ms`);
  });
});

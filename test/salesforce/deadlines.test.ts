// Every Salesforce call ends (#17): OAuth, REST and the Pub/Sub unary RPCs each go through a fault
// proxy whose established connection dies silently (blackhole, then heal: the NAT entry is gone). The
// call must end at its deadline with an error our retry loop treats as transient, and the retry must
// succeed on a fresh connection, instead of hanging on the dead one.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import { status } from "@grpc/grpc-js";
import { staticAccessTokens } from "../../src/salesforce/access-token.ts";
import { SALESFORCE_HTTP_TIMEOUT_MS } from "../../src/salesforce/auth-http.ts";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import { PUBSUB_KEEPALIVE, PubSubClient, UNARY_DEADLINE_MS } from "../../src/salesforce/pubsub/client.ts";
import { describeGrpcError, grpcCode } from "../../src/salesforce/pubsub/errors.ts";
import { RestClient, SALESFORCE_REST_DEADLINES } from "../../src/salesforce/rest.ts";
import { SalesforceTransportError, isTransient } from "../../src/salesforce/rest-errors.ts";
import { sfDatetime, simId, startSimRest } from "../../src/sim/salesforce-rest/index.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { TcpFaultProxy } from "../support/tcp-fault-proxy.ts";
import { failureOf, idle, timed } from "../support/timing.ts";
import { clientCredentials, simOrg } from "./support.ts";

const SHORT = 300;
// undici runs headers and body timeouts on a coarse timer (ticks of ~0.5 s): up to ~1 s late.
const UNDICI_SLACK = 1_000;

async function proxied(t: TestContext, url: string): Promise<TcpFaultProxy> {
  const proxy = await TcpFaultProxy.start(url);
  t.after(() => proxy.close());
  return proxy;
}

describe("Salesforce OAuth deadline", { timeout: 15_000 }, () => {
  it("defaults to 30 s for token and userinfo requests", () => {
    assert.equal(SALESFORCE_HTTP_TIMEOUT_MS, 30_000);
  });

  it("a token request on a dead keep-alive connection times out and the retry mints on a fresh one", async (t) => {
    const sim = await simOrg(t);
    const proxy = await proxied(t, sim.loginUrl);
    const clock = new ManualClock();
    const auth = new TokenProvider({
      settings: clientCredentials(sim, { login_url: proxy.url }),
      clock,
      httpTimeoutMs: SHORT,
    });
    const first = await auth.token();
    await idle();
    const warm = proxy.stats;
    assert.equal(warm.accepted, 1, "one keep-alive connection so far");

    proxy.blackhole();
    proxy.heal();
    auth.invalidate(first.accessToken);
    let second: string | undefined;
    const ms = await timed(async () => {
      second = (await auth.token()).accessToken;
    });

    assert.ok(second !== undefined && second !== first.accessToken, "a new token was minted");
    assert.equal(sim.stats().mints, 2);
    assert.equal(clock.sleeps.length, 1, "exactly one retry");
    // The retry runs on a fresh connection (fetch's pool may open a spare one as well).
    const { accepted, open } = proxy.stats;
    assert.ok(accepted >= 2, "the retry opened a fresh connection");
    assert.equal(open, accepted - 1, "the aborted fetch closed the dead socket");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 1000, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive connection → token minted after ${ms.toFixed(0)} ms`);
  });
});

describe("Salesforce REST deadlines", { timeout: 15_000 }, () => {
  const records = Array.from({ length: 5 }, (_, i) => ({
    Id: simId("0Yq", i),
    EventDate: sfDatetime(Date.UTC(2026, 0, 1) + i),
  }));

  async function rig(t: TestContext) {
    const clock = new ManualClock();
    const sim = await startSimRest({ clock, objects: { LoginEvent: records } });
    t.after(() => sim.stop());
    const proxy = await proxied(t, sim.instanceUrl);
    const rest = new RestClient({
      tokens: staticAccessTokens(proxy.url, () => "token"),
      apiVersion: "60.0",
      clock,
      deadlines: { connectMs: 5_000, responseMs: SHORT },
    });
    t.after(() => rest.close());
    const query = () => rest.queryAll("SELECT Id FROM LoginEvent ORDER BY Id");
    return { proxy, rest, clock, query };
  }

  it("defaults: connect 10 s, headers and body 30 s", () => {
    assert.deepEqual({ ...SALESFORCE_REST_DEADLINES }, { connectMs: 10_000, responseMs: 30_000 });
  });

  it("a query on a dead keep-alive connection times out and the retry succeeds on a fresh one", async (t) => {
    const r = await rig(t);
    assert.equal((await r.query()).length, 5);
    await idle();
    r.proxy.blackhole();
    r.proxy.heal();
    let rows = 0;
    const ms = await timed(async () => {
      rows = (await r.query()).length;
    });
    assert.equal(rows, 5);
    assert.equal(r.clock.sleeps.length, 1, "exactly one retry");
    assert.equal(r.proxy.stats.accepted, 2, "the retry opened a fresh connection");
    assert.equal(r.proxy.stats.open, 1, "undici dropped the dead socket");
    assert.ok(ms >= SHORT - 20 && ms < SHORT + UNDICI_SLACK + 500, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`dead keep-alive connection → query retried after ${ms.toFixed(0)} ms`);
  });

  it("a blackhole that never heals ends in a transient SF2LOKI_SF_TRANSPORT after 3 attempts", async (t) => {
    const r = await rig(t);
    await r.query();
    await idle();
    r.proxy.blackhole();
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(r.query());
    });
    assert.ok(caught instanceof SalesforceTransportError, String(caught));
    assert.equal(caught.code, "SF2LOKI_SF_TRANSPORT");
    assert.ok(isTransient(caught));
    assert.equal(r.clock.sleeps.length, 2);
    assert.ok(ms < 3 * (SHORT + UNDICI_SLACK) + 1000, `took ${ms.toFixed(0)} ms`);
    t.diagnostic(`3 silent attempts → SF2LOKI_SF_TRANSPORT after ${ms.toFixed(0)} ms`);
  });
});

describe("Pub/Sub unary RPC deadlines", { timeout: 15_000 }, () => {
  const LOGIN = "/event/LoginEventStream";
  // Short keepalive so the channel notices its dead connection within the test, yet never before
  // the 300 ms call deadline: an unanswered ping drops the connection no sooner than 600 ms later.
  const KEEPALIVE = { timeMs: 400, timeoutMs: 600 };

  async function rig(t: TestContext) {
    const sim = await simOrg(t);
    const proxy = await TcpFaultProxy.start(Number(sim.pubsubEndpoint.split(":")[1]));
    t.after(() => proxy.close());
    const client = new PubSubClient({
      endpoint: proxy.endpoint,
      auth: new TokenProvider({ settings: clientCredentials(sim) }),
      insecure: true,
      stallTimeoutMs: 0,
      unaryDeadlineMs: SHORT,
      keepalive: KEEPALIVE,
    });
    t.after(() => {
      client.close();
    });
    return { sim, proxy, client };
  }

  it("defaults: 30 s per unary call; keepalive ping every 30 s, dropped after 10 s unanswered", () => {
    assert.equal(UNARY_DEADLINE_MS, 30_000);
    assert.deepEqual({ ...PUBSUB_KEEPALIVE }, { timeMs: 30_000, timeoutMs: 10_000 });
  });

  it("GetTopic on a dead connection ends DEADLINE_EXCEEDED at its deadline; a retry succeeds once keepalive replaces it", async (t) => {
    const r = await rig(t);
    assert.equal((await r.client.getTopic(LOGIN)).topic_name, LOGIN);
    r.proxy.blackhole();
    r.proxy.heal(); // the channel's HTTP/2 connection is dead for good

    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(r.client.getTopic(LOGIN));
    });
    assert.equal(grpcCode(caught), status.DEADLINE_EXCEEDED, describeGrpcError(caught));
    assert.ok(ms >= SHORT - 20 && ms < SHORT + 500, `took ${ms.toFixed(0)} ms`);

    // The source treats any non-INVALID_ARGUMENT failure as a stream error and retries with backoff;
    // here the retry is a plain loop. Each attempt is bounded by the deadline.
    let attempts = 0;
    const recoveryMs = await timed(async () => {
      for (;;) {
        attempts++;
        try {
          await r.client.getTopic(LOGIN);
          return;
        } catch (err) {
          assert.ok(
            grpcCode(err) === status.DEADLINE_EXCEEDED || grpcCode(err) === status.UNAVAILABLE,
            describeGrpcError(err),
          );
          await sleep(50);
        }
      }
    });
    assert.ok(
      recoveryMs < KEEPALIVE.timeMs + KEEPALIVE.timeoutMs + SHORT + 1000,
      `recovered after ${recoveryMs.toFixed(0)} ms`,
    );
    assert.ok(r.proxy.stats.accepted >= 2, "on a fresh connection");
    t.diagnostic(
      `dead connection → DEADLINE_EXCEEDED after ${ms.toFixed(0)} ms; answered again ${recoveryMs.toFixed(0)} ms later (${String(attempts)} attempts)`,
    );
  });

  it("a caller's abort cancels a unary call at once", async (t) => {
    const r = await rig(t);
    await r.client.getTopic(LOGIN);
    r.proxy.blackhole();
    const ctl = new AbortController();
    const call = r.client.getTopic(LOGIN, ctl.signal);
    setTimeout(() => {
      ctl.abort();
    }, 20);
    let caught: unknown;
    const ms = await timed(async () => {
      caught = await failureOf(call);
    });
    assert.equal(grpcCode(caught), status.CANCELLED, describeGrpcError(caught));
    assert.ok(ms < SHORT, `took ${ms.toFixed(0)} ms`);
  });
});

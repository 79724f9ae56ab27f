import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { buildTopicSchema, generateEvent } from "../../src/sim/salesforce/index.ts";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import { PubSubClient } from "../../src/salesforce/pubsub/client.ts";
import { replayIdFromSequence } from "../../src/salesforce/pubsub/proto.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { clientCredentials, clientFor, simOrg } from "../salesforce/support.ts";

const T = Date.UTC(2026, 0, 1);

describe("simulated org: event generator", () => {
  it("is deterministic per seed and names events sim-<topic>-<n>", () => {
    const schema = buildTopicSchema("/event/LoginEventStream");
    const a = schema.type.toBuffer(generateEvent(42, schema, 7, T));
    const b = schema.type.toBuffer(generateEvent(42, schema, 7, T));
    const c = schema.type.toBuffer(generateEvent(43, schema, 7, T));
    assert.deepEqual(a, b);
    assert.notDeepEqual(a, c);
    const rec = schema.type.fromBuffer(a) as Record<string, unknown>;
    assert.equal(rec.EventIdentifier, "sim-LoginEventStream-7");
    for (const f of [
      "EventDate",
      "Username",
      "SourceIp",
      "LoginType",
      "Status",
      "Application",
      "Browser",
      "Platform",
      "SessionKey",
      "UserId",
    ]) {
      assert.ok(rec[f] !== undefined, f);
    }
    assert.match(schema.schemaId, /^[A-Za-z0-9_-]{22}$/);
  });

  it("gives every topic kind a realistic schema (RTEM streams, custom events, CDC)", () => {
    for (const topic of [
      "/event/ApiEventStream",
      "/event/LightningUriEventStream",
      "/event/Order_Shipped__e",
      "/data/AccountChangeEvent",
    ]) {
      const schema = buildTopicSchema(topic);
      const rec = schema.type.fromBuffer(schema.type.toBuffer(generateEvent(1, schema, 1, T))) as Record<
        string,
        unknown
      >;
      assert.equal(rec.EventIdentifier, `sim-${topic.slice(topic.lastIndexOf("/") + 1)}-1`);
    }
  });
});

describe("simulated org: Pub/Sub server", () => {
  it("honours the retention window: EARLIEST starts at the oldest retained id, older ids are corrupted", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 100, retentionEvents: 30 });
    const client = new PubSubClient({
      endpoint: sim.pubsubEndpoint,
      auth: new TokenProvider({ settings: clientCredentials(sim) }),
      insecure: true,
      stallTimeoutMs: 0,
    });
    t.after(() => {
      client.close();
    });
    const ac = new AbortController();
    for await (const item of client.subscribe(
      { topic: "/event/LoginEventStream", preset: "EARLIEST", numRequested: 10 },
      ac.signal,
    )) {
      assert.equal(Number(item.replayId.readBigUInt64BE()), 71);
      break;
    }
    const expired = client.subscribe(
      {
        topic: "/event/LoginEventStream",
        preset: "CUSTOM",
        replayId: replayIdFromSequence(10),
        numRequested: 10,
      },
      ac.signal,
    );
    await assert.rejects(expired.next(), /Replay ID validation failed/);
    assert.equal(sim.stats().topics["/event/LoginEventStream"]!.firstRetained, 71);
  });

  it("rejects RPCs whose token, instance URL or tenant id does not match", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 1 });
    const client = new PubSubClient({
      endpoint: sim.pubsubEndpoint,
      auth: new TokenProvider({ settings: clientCredentials(sim, { org_id: "00Dwrong" }) }),
      insecure: true,
      stallTimeoutMs: 0,
    });
    t.after(() => {
      client.close();
    });
    await assert.rejects(client.getTopic("/event/LoginEventStream"), /instanceurl or tenantid/);
  });

  it("ends a session after its timeout on the org's clock: REST 401, userinfo 403, an open stream UNAUTHENTICATED", async (t) => {
    const clock = new ManualClock({ startMs: T, auto: false });
    const sim = await simOrg(t, { eventsPerTopic: 1, sessionTimeoutMs: 600_000, rest: { clock } });
    const { client, auth } = clientFor(t, sim);
    const { accessToken } = await auth.token();
    const get = async (path: string): Promise<number> =>
      (await fetch(`${sim.instanceUrl}${path}`, { headers: { authorization: `Bearer ${accessToken}` } }))
        .status;
    const stream = client.subscribe(
      { topic: "/event/LoginEventStream", preset: "EARLIEST", numRequested: 10 },
      new AbortController().signal,
    );
    assert.equal((await stream.next()).done, false);
    clock.advance(599_999);
    assert.deepEqual(
      [await get("/services/data/v60.0/limits"), await get("/services/oauth2/userinfo")],
      [200, 200],
    );
    clock.advance(1);
    assert.deepEqual(
      [await get("/services/data/v60.0/limits"), await get("/services/oauth2/userinfo")],
      [401, 403],
    );
    sim.faults.publish("/event/LoginEventStream", 1);
    await assert.rejects(stream.next(), /UNAUTHENTICATED|expired/i);
    assert.equal(sim.stats().mints, 1);
    // A new token is a new session.
    await client.getTopic("/event/LoginEventStream");
    assert.equal(sim.stats().mints, 2);
  });

  it("lists topics as sObjects in describeGlobal, with Store twins for <X>Event topics", async (t) => {
    const sim = await simOrg(t, { topics: ["/event/LoginEventStream", "/event/ApiAnomalyEvent"] });
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    const token = await auth.token();
    const res = await fetch(`${token.instanceUrl}/services/data/v60.0/sobjects/`, {
      headers: { authorization: `Bearer ${token.accessToken}` },
    });
    const names = ((await res.json()) as { sobjects: { name: string }[] }).sobjects.map((s) => s.name);
    assert.ok(names.includes("LoginEventStream"));
    assert.ok(names.includes("ApiAnomalyEvent") && names.includes("ApiAnomalyEventStore"));
    assert.ok(names.includes("Account"));
  });
});

// Several simulated orgs behind one HTTP and one gRPC port: every token sees its own org's topics,
// events, EventLogFiles and faults, never another's.
import { describe, it, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { TokenProvider, type SalesforceSettings } from "../../src/salesforce/auth.ts";
import { PubSubClient } from "../../src/salesforce/pubsub/client.ts";
import { startSimOrgs, type SimOrgs } from "../../src/sim/salesforce/index.ts";
import { SECRET, clientCredentials, jwtBearer, keyPair } from "../salesforce/support.ts";
import { waitFor } from "../support/timing.ts";

const LOGIN = "/event/LoginEventStream";

async function twoOrgs(t: TestContext): Promise<SimOrgs> {
  const sims = await startSimOrgs({
    orgs: [
      {
        name: "acme",
        clientSecret: SECRET,
        topics: [LOGIN, "/event/ApiEventStream"],
        eventsPerTopic: 5,
        polling: { eventLogFiles: { Report: { rows: 10, files: 2 } } },
      },
      {
        name: "globex",
        publicKeyPem: keyPair().publicPem,
        username: "integration@example.com",
        topics: [LOGIN, "/event/LightningUriEventStream"],
        eventsPerTopic: 7,
        polling: { eventLogFiles: { URI: { rows: 10 } } },
      },
    ],
  });
  t.after(() => sims.stop());
  return sims;
}

function pubsub(t: TestContext, endpoint: string, settings: SalesforceSettings): PubSubClient {
  const client = new PubSubClient({
    endpoint,
    auth: new TokenProvider({ settings }),
    insecure: true,
    stallTimeoutMs: 0,
  });
  t.after(() => {
    client.close();
  });
  return client;
}

/** Every EventIdentifier a topic holds, read from EARLIEST with this client. */
async function identifiers(client: PubSubClient, topic: string, count: number): Promise<string[]> {
  const ac = new AbortController();
  const ids: string[] = [];
  for await (const item of client.subscribe({ topic, preset: "EARLIEST", numRequested: 100 }, ac.signal)) {
    if (item.kind !== "event") continue;
    ids.push(String(item.payload.EventIdentifier));
    if (ids.length === count) break;
  }
  ac.abort();
  return ids;
}

async function restGet(
  settings: SalesforceSettings,
  path: string,
): Promise<{ status: number; body: unknown }> {
  const token = await new TokenProvider({ settings }).token();
  const res = await fetch(`${token.instanceUrl}/services/data/v60.0${path}`, {
    headers: { authorization: `Bearer ${token.accessToken}` },
  });
  return { status: res.status, body: await res.json() };
}

describe("simulated Salesforce serving several orgs", () => {
  it("shares one login URL and one Pub/Sub endpoint, with an org id and client id per org", async (t) => {
    const sims = await twoOrgs(t);
    const [acme, globex] = [sims.org("acme"), sims.org("globex")];
    assert.equal(acme.loginUrl, globex.loginUrl);
    assert.equal(acme.pubsubEndpoint, globex.pubsubEndpoint);
    assert.equal(acme.pubsubEndpoint, sims.pubsubEndpoint);
    assert.notEqual(acme.orgId, globex.orgId);
    assert.notEqual(acme.clientId, globex.clientId);
    assert.throws(() => sims.org("initech"), /no org named initech; orgs: acme, globex/);
  });

  it("mints each org's token from its own client (secret or JWT consumer key) and counts it there", async (t) => {
    const sims = await twoOrgs(t);
    const [acme, globex] = [sims.org("acme"), sims.org("globex")];
    const a = await new TokenProvider({ settings: clientCredentials(acme) }).token();
    const g = await new TokenProvider({ settings: jwtBearer(globex) }).token();
    assert.ok(a.accessToken.startsWith(`${acme.orgId}!`), a.accessToken);
    assert.ok(g.accessToken.startsWith(`${globex.orgId}!`), g.accessToken);
    assert.equal(acme.stats().mints, 1);
    assert.equal(globex.stats().mints, 1);
    // acme has no JWT key, globex no secret: each org's client is its own.
    await assert.rejects(new TokenProvider({ settings: jwtBearer(acme) }).token());
    await assert.rejects(new TokenProvider({ settings: clientCredentials(globex) }).token());
  });

  it("streams each org's own events to its token, and refuses a token sent with another org's tenant id", async (t) => {
    const sims = await twoOrgs(t);
    const [acme, globex] = [sims.org("acme"), sims.org("globex")];
    const fromAcme = await identifiers(pubsub(t, sims.pubsubEndpoint, clientCredentials(acme)), LOGIN, 5);
    const fromGlobex = await identifiers(pubsub(t, sims.pubsubEndpoint, jwtBearer(globex)), LOGIN, 7);
    assert.deepEqual(
      fromAcme,
      [1, 2, 3, 4, 5].map((n) => `sim-acme-LoginEventStream-${n}`),
    );
    assert.deepEqual(
      fromGlobex,
      [1, 2, 3, 4, 5, 6, 7].map((n) => `sim-globex-LoginEventStream-${n}`),
    );
    // A topic only globex has is not found with acme's token.
    const acmeClient = pubsub(t, sims.pubsubEndpoint, clientCredentials(acme));
    await assert.rejects(acmeClient.getTopic("/event/LightningUriEventStream"), /not found/);
    // acme's token presented as globex's tenant.
    const crossed = pubsub(t, sims.pubsubEndpoint, clientCredentials(acme, { org_id: globex.orgId }));
    await assert.rejects(crossed.getTopic(LOGIN), /instanceurl or tenantid/);
    assert.ok(acme.stats().streams.every((s) => s.topic === LOGIN));
    assert.ok(globex.stats().streams.every((s) => s.topic === LOGIN));
  });

  it("answers REST with each token's own EventLogFiles and sObjects", async (t) => {
    const sims = await twoOrgs(t);
    const [acme, globex] = [sims.org("acme"), sims.org("globex")];
    const soql = encodeURIComponent("SELECT Id, EventType FROM EventLogFile");
    const types = (body: unknown): string[] =>
      (body as { records: { EventType: string }[] }).records.map((r) => r.EventType);
    const a = await restGet(clientCredentials(acme), `/query?q=${soql}`);
    const g = await restGet(jwtBearer(globex), `/query?q=${soql}`);
    assert.deepEqual(types(a.body), ["Report", "Report"]);
    assert.deepEqual(types(g.body), ["URI"]);
    const names = (body: unknown): string[] =>
      (body as { sobjects: { name: string }[] }).sobjects.map((s) => s.name);
    const described = names((await restGet(clientCredentials(acme), "/sobjects")).body);
    assert.ok(described.includes("ApiEventStream") && !described.includes("LightningUriEventStream"));
    assert.equal(acme.stats().describeCalls, 1);
    assert.equal(globex.stats().describeCalls, 0);
    // A token no org issued is refused.
    const res = await fetch(`${sims.loginUrl}/services/data/v60.0/limits`, {
      headers: { authorization: "Bearer 00DSIM0000000009AA!forged" },
    });
    assert.equal(res.status, 401);
  });

  it("aims faults at one org: ending acme's streams leaves globex's streaming", async (t) => {
    const sims = await twoOrgs(t);
    const [acme, globex] = [sims.org("acme"), sims.org("globex")];
    const ac = new AbortController();
    t.after(() => {
      ac.abort();
    });
    const subscribe = (client: PubSubClient) => {
      const items = client.subscribe({ topic: LOGIN, preset: "LATEST", numRequested: 10 }, ac.signal);
      return items[Symbol.asyncIterator]();
    };
    const a = subscribe(pubsub(t, sims.pubsubEndpoint, clientCredentials(acme)));
    const g = subscribe(pubsub(t, sims.pubsubEndpoint, jwtBearer(globex)));
    const firstA = a.next();
    const firstG = g.next();
    const opened = (): boolean =>
      acme.stats().streams.some((s) => s.active) && globex.stats().streams.some((s) => s.active);
    await waitFor(opened, "both orgs to have an open stream");
    assert.equal(acme.faults.endStreams(), 1);
    assert.ok(
      globex.stats().streams.every((s) => s.active),
      "globex's stream survives acme's fault",
    );
    globex.faults.publish(LOGIN, 1);
    const got = await firstG;
    assert.equal(
      (got.value as { payload: Record<string, unknown> }).payload.EventIdentifier,
      "sim-globex-LoginEventStream-8",
    );
    void firstA.catch(() => undefined);
  });
});

import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { ManualClock } from "../../src/util/clock.ts";
import { AuthError, ORG_ID_RETRY_MS, TokenProvider } from "../../src/salesforce/auth.ts";
import { captureLogs, clientCredentials, jwtBearer, keyPair, metricsHarness, simOrg } from "./support.ts";

const TOKEN_PATH = "/services/oauth2/token";
const USERINFO_PATH = "/services/oauth2/userinfo";

describe("TokenProvider: JWT bearer", () => {
  it("mints a token whose RS256 assertion the org verifies, with exactly iss/sub/aud/exp", async (t) => {
    const sim = await simOrg(t, { publicKeyPem: keyPair().publicPem, username: "integration@example.com" });
    const clock = new ManualClock({ startMs: Date.now() });
    const m = metricsHarness();
    const auth = new TokenProvider({ settings: jwtBearer(sim), clock, meter: m.meter });

    const token = await auth.token();

    assert.match(token.accessToken, /^00DSIM/);
    assert.equal(token.instanceUrl, sim.instanceUrl);
    const claims = sim.stats().lastClaims!;
    assert.equal(claims.iss, sim.clientId);
    assert.equal(claims.sub, "integration@example.com");
    assert.equal(claims.aud, sim.loginUrl);
    assert.equal(claims.exp, Math.floor(clock.now() / 1000) + 180);
    assert.equal(claims.iat, undefined);
    assert.equal(claims.jti, undefined);
    assert.equal(await m.value("sf2loki_auth_refreshes"), 1);
    assert.equal(auth.hasToken(), true);
  });

  it("accepts a PKCS#8 key as well as PKCS#1", async (t) => {
    const sim = await simOrg(t, { publicKeyPem: keyPair().publicPem });
    const auth = new TokenProvider({
      settings: jwtBearer(sim, { private_key: keyPair().privatePem }),
      clock: new ManualClock({ startMs: Date.now() }),
    });
    assert.ok((await auth.token()).accessToken);
  });

  it("reports 400 invalid_grant as an AuthError naming the org, login URL and description, without retrying", async (t) => {
    const sim = await simOrg(t, { publicKeyPem: keyPair().publicPem });
    const other = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
      type: "pkcs8",
      format: "pem",
    });
    const m = metricsHarness();
    const auth = new TokenProvider({
      settings: jwtBearer(sim, { private_key: other.toString() }),
      orgName: "prod",
      clock: new ManualClock({ startMs: Date.now() }),
      meter: m.meter,
    });

    const err = await auth.token().then(
      () => assert.fail("expected AuthError"),
      (e: unknown) => e,
    );

    assert.ok(err instanceof AuthError);
    assert.equal(err.code, "SF2LOKI_AUTH");
    assert.equal(err.status, 400);
    assert.match(err.message, /^org 'prod': /);
    assert.ok(err.message.includes(`${sim.loginUrl}/services/oauth2/token`));
    assert.match(err.message, /invalid_grant \(invalid assertion\)/);
    assert.match(err.message, /certificate matches the private key/);
    assert.equal(err.message.includes("\n"), false);
    assert.equal(sim.stats().tokenRequests, 1);
    assert.equal(await m.value("sf2loki_auth_errors"), 1);
  });

  it("turns an unreadable PEM into an AuthError before any request", async (t) => {
    const sim = await simOrg(t, { publicKeyPem: keyPair().publicPem });
    const auth = new TokenProvider({
      settings: jwtBearer(sim, {
        private_key: "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----",
      }),
    });
    await assert.rejects(
      auth.token(),
      (e: unknown) => e instanceof AuthError && /not a readable PEM/.test(e.message),
    );
    assert.equal(sim.stats().tokenRequests, 0);
  });
});

describe("TokenProvider: client credentials, cache and retries", () => {
  it("mints with client_id/client_secret and rejects a wrong secret as invalid_client", async (t) => {
    const sim = await simOrg(t);
    assert.ok((await new TokenProvider({ settings: clientCredentials(sim) }).token()).accessToken);
    const bad = new TokenProvider({ settings: clientCredentials(sim, { client_secret: "wrong" }) });
    await assert.rejects(
      bad.token(),
      (e: unknown) => e instanceof AuthError && /invalid_client/.test(e.message),
    );
  });

  it("serves the cached token until 60 s before the assumed expiry, then re-mints", async (t) => {
    const sim = await simOrg(t);
    const clock = new ManualClock({ auto: false });
    const auth = new TokenProvider({ settings: clientCredentials(sim, { token_ttl: 3_600_000 }), clock });

    const first = await auth.token();
    clock.advance(3_600_000 - 60_000 - 1);
    assert.equal((await auth.token()).accessToken, first.accessToken);
    assert.equal(auth.hasToken(), true);
    clock.advance(1);
    assert.equal(auth.hasToken(), false);
    const second = await auth.token();

    assert.notEqual(second.accessToken, first.accessToken);
    assert.equal(sim.stats().mints, 2);
  });

  it("shrinks the skew to a quarter of a short token_ttl so a token is usable at all (#137)", async (t) => {
    const sim = await simOrg(t);
    const clock = new ManualClock({ auto: false });
    const auth = new TokenProvider({ settings: clientCredentials(sim, { token_ttl: 100_000 }), clock });
    await auth.token();
    assert.equal(auth.hasToken(), true);
    clock.advance(75_000);
    assert.equal(auth.hasToken(), false);
  });

  it("single-flights 10 concurrent callers into one mint", async (t) => {
    const sim = await simOrg(t);
    const auth = new TokenProvider({ settings: clientCredentials(sim) });

    const tokens = await Promise.all(Array.from({ length: 10 }, () => auth.token()));

    assert.equal(new Set(tokens.map((x) => x.accessToken)).size, 1);
    assert.equal(sim.stats().tokenRequests, 1);
  });

  it("invalidate(stale) keeps a fresher cached token (#136)", async (t) => {
    const sim = await simOrg(t);
    const auth = new TokenProvider({ settings: clientCredentials(sim) });

    const stale = await auth.token();
    auth.invalidate(stale.accessToken);
    const fresh = await auth.token();
    auth.invalidate(stale.accessToken);

    assert.equal((await auth.token()).accessToken, fresh.accessToken);
    assert.equal(sim.stats().mints, 2);
    auth.invalidate(fresh.accessToken);
    assert.notEqual((await auth.token()).accessToken, fresh.accessToken);
    assert.equal(sim.stats().mints, 3);
  });

  it("retries 503 with backoff and succeeds", async (t) => {
    const sim = await simOrg(t);
    sim.faults.failHttp(TOKEN_PATH, 2, 503);
    const clock = new ManualClock();
    const auth = new TokenProvider({ settings: clientCredentials(sim), clock });

    assert.ok((await auth.token()).accessToken);

    assert.equal(sim.stats().tokenRequests, 3);
    assert.equal(clock.sleeps.length, 2);
    assert.ok(clock.sleeps.every((ms) => ms >= 0 && ms <= 10_000));
  });

  it("gives up after 4 attempts on persistent 5xx, and never retries a 4xx", async (t) => {
    const sim = await simOrg(t);
    sim.faults.failHttp(TOKEN_PATH, 4, 503, "down for maintenance");
    const auth = new TokenProvider({ settings: clientCredentials(sim), clock: new ManualClock() });
    await assert.rejects(
      auth.token(),
      (e: unknown) =>
        e instanceof AuthError && /after 4 attempts: HTTP 503 — down for maintenance/.test(e.message),
    );
    assert.equal(sim.stats().tokenRequests, 4);

    sim.faults.failHttp(TOKEN_PATH, 1, 429, '{"error":"rate_limited"}');
    await assert.rejects(auth.token(), (e: unknown) => e instanceof AuthError && e.status === 429);
    assert.equal(sim.stats().tokenRequests, 5);
  });
});

describe("TokenProvider: org id", () => {
  it("returns a configured org id without any userinfo call", async (t) => {
    const sim = await simOrg(t);
    const auth = new TokenProvider({ settings: clientCredentials(sim, { org_id: "00Dconfigured" }) });
    assert.equal(await auth.orgId(), "00Dconfigured");
    assert.equal(sim.stats().userinfoCalls, 0);
    assert.equal(sim.stats().tokenRequests, 0);
  });

  it("resolves once through userinfo and caches it", async (t) => {
    const sim = await simOrg(t);
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    assert.equal(await auth.orgId(), sim.orgId);
    assert.equal(await auth.orgId(), sim.orgId);
    assert.equal(sim.stats().userinfoCalls, 1);
  });

  it("re-mints once when userinfo rejects the session (#109)", async (t) => {
    const sim = await simOrg(t);
    sim.faults.failHttp(USERINFO_PATH, 1, 401, "Bad_OAuth_Token");
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    assert.equal(await auth.orgId(), sim.orgId);
    assert.equal(sim.stats().mints, 2);
  });

  it("negative-caches a failure for the retry window and logs it once (#110)", async (t) => {
    const sim = await simOrg(t);
    sim.faults.failHttp(USERINFO_PATH, 1, 403, "insufficient scope: openid");
    const clock = new ManualClock({ auto: false });
    const logs = captureLogs();
    const auth = new TokenProvider({
      settings: clientCredentials(sim),
      clock,
      logger: logs.logger,
      orgName: "eu",
    });

    await assert.rejects(auth.orgId(), (e: unknown) => e instanceof AuthError && e.status === 403);
    await assert.rejects(auth.orgId(), AuthError);
    assert.equal(sim.stats().userinfoCalls, 1);
    assert.equal(logs.messages(40).filter((m) => m.includes("userinfo")).length, 1);
    assert.match(logs.messages(40)[0]!, /openid/);

    clock.advance(ORG_ID_RETRY_MS);
    assert.equal(await auth.orgId(), sim.orgId);
    assert.equal(sim.stats().userinfoCalls, 2);
    assert.ok(logs.messages(30).includes("org id resolved"));
  });
});

// Tokens minted per hour by one org's TokenProvider (#38), counted at the simulated org's OAuth endpoint.
// The provider, its REST client and the org share one manual clock, so four simulated hours of one
// query a minute take no real time. The provider re-mints when its assumed lifetime (token_ttl less
// the 60 s refresh skew) runs out, or when the org refuses the token (401 INVALID_SESSION_ID) because
// the org's session timeout ended it first: per hour that is 3600 s / min(token_ttl - 60 s, timeout).
import assert from "node:assert/strict";
import { test } from "node:test";
import { TOKEN_REFRESH_SKEW_MS, TokenProvider } from "../../src/salesforce/auth.ts";
import { RestClient } from "../../src/salesforce/rest.ts";
import { startSimOrg } from "../../src/sim/salesforce/index.ts";
import { simSalesforceSettings } from "../../src/sim/salesforce/settings.ts";
import { ManualClock } from "../../src/util/clock.ts";

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const HOURS = 4;
const SECRET = "s3cret";

/** Mints, and queries the org refused, over HOURS simulated hours of one query a minute. */
async function mintsOver(
  tokenTtlMs: number,
  sessionTimeoutMs: number,
): Promise<{ mints: number; refused: number }> {
  const clock = new ManualClock({ auto: true });
  const sim = await startSimOrg({
    clientSecret: SECRET,
    sessionTimeoutMs,
    rest: { clock },
    polling: { objects: { LoginEvent: { records: 1 } } },
  });
  const tokens = new TokenProvider({
    settings: simSalesforceSettings(sim, SECRET, { token_ttl: tokenTtlMs }),
    clock,
  });
  const rest = new RestClient({ tokens, apiVersion: "60.0", clock });
  try {
    for (let minute = 0; minute < HOURS * 60; minute++) {
      await rest.queryAll("SELECT Id FROM LoginEvent");
      clock.advance(MINUTE);
    }
    assert.equal(sim.rest.stats.queries.length, HOURS * 60, "every query answered");
    return { mints: sim.stats().mints, refused: sim.rest.stats.unauthorized };
  } finally {
    await rest.close();
    await sim.stop();
  }
}

/** One mint at the start, then one each time `everyMs` has passed, over HOURS hours of queries. */
function expected(everyMs: number): number {
  return Math.ceil((HOURS * HOUR) / everyMs);
}

const cases = [
  // The defaults: token_ttl 1h, Salesforce's default 2 h session timeout. token_ttl re-mints first.
  { name: "token_ttl 1h, session timeout 2h (the defaults)", ttl: HOUR, session: 2 * HOUR },
  // token_ttl raised to the org's 2 h: the provider re-mints a minute before the session ends.
  { name: "token_ttl 2h, session timeout 2h", ttl: 2 * HOUR, session: 2 * HOUR },
  // A short org or connected-app timeout: the org refuses the token first, and the 401 re-mints.
  { name: "token_ttl 1h, session timeout 15m", ttl: HOUR, session: 15 * MINUTE },
];

for (const c of cases) {
  test(`one org's provider mints once per lifetime: ${c.name}`, async (t) => {
    const every = Math.min(c.ttl - TOKEN_REFRESH_SKEW_MS, c.session);
    const { mints, refused } = await mintsOver(c.ttl, c.session);
    t.diagnostic(
      `${c.name}: ${mints} mints in ${HOURS} h (1 at start, then one every ${every / MINUTE} min = ` +
        `${(HOUR / every).toFixed(2)}/h); ${refused} queries refused 401`,
    );
    assert.equal(mints, expected(every));
    // Re-minted ahead of the session's end, or after the org refused the token: once per lifetime.
    assert.equal(refused, c.session < c.ttl - TOKEN_REFRESH_SKEW_MS ? mints - 1 : 0);
  });
}

// The multi-org world's delivery accounting: per org and topic, from the `org` label Loki holds and
// the org each event id names; a line under another org's label is misfiled, never delivered.
import assert from "node:assert/strict";
import { test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { resolvedOrgs } from "../../src/config/orgs.ts";
import { startMultiOrgWorld } from "../../src/sim/multi-org-world.ts";

const LOGIN = "/event/LoginEventStream";

test("counts delivered, duplicate, missing and misfiled events per org, and its config names every org", async (t) => {
  const world = await startMultiOrgWorld({ orgs: 2, eventsPerTopic: 2, topics: [LOGIN] });
  t.after(() => world.stop());
  const ns = String(BigInt(Date.now()) * 1_000_000n);
  const line = (org: string, n: number): [string, string] => [
    ns,
    JSON.stringify({ EventIdentifier: `sim-${org}-LoginEventStream-${n}` }),
  ];
  const stream = (org: string, values: [string, string][]) => ({
    stream: { org, event_type: "LoginEventStream" },
    values,
  });
  const res = await fetch(world.loki.pushUrl, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      streams: [
        stream("org1", [line("org1", 1), line("org1", 1)]),
        // org2's event filed under org1: a replica that mixed up its orgs.
        stream("org1", [line("org2", 1)]),
      ],
    }),
  });
  assert.equal(res.status, 204);
  assert.deepEqual(world.stats(), {
    org1: { LoginEventStream: { emitted: 2, delivered: 1, duplicates: 1, missing: 1, misfiled: 0 } },
    org2: { LoginEventStream: { emitted: 2, delivered: 0, duplicates: 0, missing: 2, misfiled: 1 } },
  });
  world.publish(3);
  assert.equal(world.totals().emitted, 10);

  const orgs = resolvedOrgs(validateConfig(world.config("/tmp/unused.json")));
  assert.deepEqual(
    orgs.map((o) => [o.name, o.salesforce.client_id]),
    world.names.map((n) => [n, world.org(n).clientId]),
  );
});

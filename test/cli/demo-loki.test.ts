// `sf2loki demo --loki-url`: what the operator types becomes the push URL, each run gets an org id of its
// own, and bad input is a usage error (exit 2) before anything starts. The push and the LogQL read-back
// against a real Loki are in test/loki-real/demo.loki.ts.
import assert from "node:assert/strict";
import { test } from "node:test";
import { demoOrgId, demoPushUrl } from "../../src/cli/demo-loki.ts";
import { cli } from "../support/cli.ts";

test("--loki-url takes Loki's base URL or its push URL, behind a path prefix too", () => {
  assert.equal(demoPushUrl("http://localhost:3100"), "http://localhost:3100/loki/api/v1/push");
  assert.equal(demoPushUrl("http://localhost:3100/"), "http://localhost:3100/loki/api/v1/push");
  assert.equal(demoPushUrl("https://gw/tenant-a/loki/api/v1/push"), "https://gw/tenant-a/loki/api/v1/push");
  assert.equal(demoPushUrl("https://gw/tenant-a"), "https://gw/tenant-a/loki/api/v1/push");
  assert.throws(() => demoPushUrl("localhost:3100"), /must be http\(s\)/);
  assert.throws(() => demoPushUrl("not a url"), /is not a URL/);
});

test("each demo run's org id is Salesforce-shaped and its own", () => {
  const a = demoOrgId();
  assert.match(a, /^00DDEMO[A-Z0-9]{11}$/);
  assert.notEqual(a, demoOrgId());
});

test("a bad --loki-url, or --tenant-id alone, is a usage error before anything starts", async () => {
  const bad = await cli(["demo", "--loki-url", "ftp://loki"]);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--loki-url must be http\(s\), got ftp:/);
  const alone = await cli(["demo", "--tenant-id", "t1"]);
  assert.equal(alone.code, 2);
  assert.match(alone.stderr, /--tenant-id needs --loki-url/);
});

test("demo --managed: every event once through managed subscriptions, each committed on Salesforce to the last event", async () => {
  const r = await cli(["demo", "--managed", "--events", "300", "--json"]);
  assert.equal(r.code, 0, r.stderr);
  const summary = JSON.parse(r.stdout) as {
    delivered: number;
    duplicates: number;
    missing: number;
    managed: { subscription: string; committed: number; last: number }[];
  };
  assert.deepEqual([summary.delivered, summary.duplicates, summary.missing], [900, 0, 0]);
  assert.equal(summary.managed.length, 3);
  for (const m of summary.managed) assert.equal(m.committed, m.last, JSON.stringify(m));
  assert.match(summary.managed[0]!.subscription, /^SF2Loki_/);
});

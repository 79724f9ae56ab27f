// `sf2loki demo --loki-url` into a real Loki: the summary it prints is what LogQL says, and an
// independent LogQL count of the run's org agrees.
import assert from "node:assert/strict";
import { test } from "node:test";
import { cli } from "../support/cli.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();

test(
  "sf2loki demo --loki-url --tenant-id: every event counted back once, the Grafana query printed",
  { skip: shared.missing },
  async () => {
    const tenant = "demo";
    const run = await cli([
      "demo",
      "--events",
      "400",
      "--json",
      "--loki-url",
      shared.loki.url,
      "--tenant-id",
      tenant,
    ]);
    assert.equal(run.code, 0, run.stderr);
    const summary = JSON.parse(run.stdout) as {
      emitted: number;
      delivered: number;
      duplicates: number;
      missing: number;
    };
    assert.deepEqual(
      {
        emitted: summary.emitted,
        delivered: summary.delivered,
        duplicates: summary.duplicates,
        missing: summary.missing,
      },
      { emitted: 1200, delivered: 1200, duplicates: 0, missing: 0 },
    );
    const orgId = (JSON.parse(run.stdout) as { loki?: { sf_org_id?: string } }).loki?.sf_org_id;
    assert.match(orgId ?? "", /^00DDEMO[A-Z0-9]{11}$/, "the summary names the run's org");
    const counts = await shared.loki
      .reader(tenant)
      .countBy(`{sf_org_id="${orgId}"}`, nowNs() - 3_600_000_000_000n, nowNs() + 60_000_000_000n, [
        "event_type",
      ]);
    assert.deepEqual(Object.fromEntries(counts), {
      LoginEventStream: 400,
      ApiEventStream: 400,
      LightningUriEventStream: 400,
    });
    // A second run in the same Loki and tenant is its own: its own org, its own exact count.
    const again = await cli([
      "demo",
      "--events",
      "100",
      "--json",
      "--loki-url",
      shared.loki.url,
      "--tenant-id",
      tenant,
    ]);
    assert.equal(again.code, 0, again.stderr);
    assert.equal((JSON.parse(again.stdout) as { delivered: number }).delivered, 300);
  },
);

test("sf2loki demo --loki-url prints the LogQL to paste into Grafana", { skip: shared.missing }, async () => {
  const run = await cli(["demo", "--events", "50", "--loki-url", shared.loki.url, "--tenant-id", "paste"]);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /total: emitted 150, delivered 150, duplicates 0, missing 0/);
  assert.match(
    run.stdout,
    /in Grafana \(Explore, this Loki, tenant paste\):\n\s+\{sf_org_id="00DDEMO[A-Z0-9]{11}", source="pubsub"\}/,
  );
  assert.match(
    run.stdout,
    /sum by \(event_type\) \(count_over_time\(\{sf_org_id="00DDEMO[A-Z0-9]{11}", source="pubsub"\}\[\$__auto\]\)\)/,
  );
});

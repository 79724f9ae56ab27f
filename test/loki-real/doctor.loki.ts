// `sf2loki doctor` against the real Loki (#26 case 6): the loki row PASSes and its one test line is in
// Loki under the tenant; without a tenant the real Loki's 401 FAILs the row, naming the key to fix.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { stringify } from "yaml";
import { startDemoWorld } from "../../src/sim/demo-world.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { nowNs, realLokiForFile } from "./support/real-loki.ts";

const shared = realLokiForFile();

interface Row {
  name: string;
  status: string;
  detail: string;
}

async function lokiRow(tenant: string | undefined): Promise<Row> {
  const world = await startDemoWorld({ eventsPerTopic: 5 });
  try {
    const dir = tempDir("sf2loki-doctor-real-");
    const config = world.config(join(dir, "state.json")) as { sink: { loki: Record<string, unknown> } };
    config.sink.loki.url = shared.loki.pushUrl;
    if (tenant !== undefined) config.sink.loki.tenant_id = tenant;
    const r = await cli(["doctor", "--json", "--config", writeFile(dir, "c.yaml", stringify(config))]);
    const row = (JSON.parse(r.stdout) as { checks: Row[] }).checks.find((c) => c.name === "loki");
    assert.ok(row, r.stdout);
    return row;
  } finally {
    await world.stop();
  }
}

test(
  "sf2loki doctor: the loki row PASSes against the real Loki, and its test line is there",
  { skip: shared.missing },
  async () => {
    const row = await lokiRow("doctor-t");
    assert.equal(row.status, "PASS", row.detail);
    assert.match(row.detail, /pushed 1 test line with structured metadata/);
    const count = await shared.loki
      .reader("doctor-t")
      .count('{source="sf2loki-doctor"}', nowNs() - 600_000_000_000n, nowNs() + 60_000_000_000n);
    assert.equal(count, 1);
  },
);

test(
  "sf2loki doctor without a tenant: the real Loki's 401 FAILs the row, naming tenant_id",
  { skip: shared.missing },
  async () => {
    const row = await lokiRow(undefined);
    assert.equal(row.status, "FAIL", row.detail);
    assert.match(row.detail, /HTTP 401/);
    assert.match(row.detail, /no org id/);
    assert.match(row.detail, /sink\.loki\.tenant_id/);
  },
);

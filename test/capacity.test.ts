import assert from "node:assert/strict";
import { test } from "node:test";
import {
  BASELINE_MIB,
  MODULE_MIB,
  TYPE_STRIPPING_MIB,
  YOUNG_GENERATION_MIB,
  memoryModel,
} from "../src/capacity.ts";
import { validateConfig } from "../src/config/load.ts";

const salesforce = {
  auth_mode: "client_credentials",
  login_url: "https://example.my.salesforce.com",
  client_id: "id",
  client_secret: "secret",
};
const elf = (batch: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) =>
  validateConfig({
    salesforce,
    sources: { eventlogfile: { enabled: true, event_types: ["API"] } },
    sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push", batch } },
    ...extra,
  });

test("the model adds up: baseline, young generation, live data x growth, bodies in flight", () => {
  const m = memoryModel(elf());
  assert.equal(m.baseline_mib, BASELINE_MIB);
  assert.equal(m.modules_mib, 0);
  const sum = m.baseline_mib + m.young_generation_mib + m.old_generation_mib + m.external_mib;
  assert.ok(Math.abs(m.total_mib - sum) < 0.2, `${m.total_mib} vs ${sum}`);
  assert.equal(m.young_generation_mib, YOUNG_GENERATION_MIB);
  // Defaults, 1 KiB entries: the entry bound (10 000) binds before the 256 MiB byte budget.
  assert.equal(m.live_by_part["lane queues"], 19.5);
});

test("each bound moves the prediction: queue bytes cap the entry bound, in-flight batches add", () => {
  const base = memoryModel(elf()).total_mib;
  assert.ok(memoryModel(elf({ queue_maxsize: 100_000 })).total_mib > base + 100);
  const capped = memoryModel(elf({ queue_maxsize: 100_000, queue_max_bytes: 8 * 2 ** 20 }));
  assert.equal(capped.live_by_part["lane queues"], 16);
  assert.ok(memoryModel(elf({ max_in_flight: 8 })).total_mib > base);
  assert.ok(memoryModel(elf(), { entryBytes: 4096 }).total_mib > base);
  assert.equal(memoryModel(elf(), { fromSource: true }).baseline_mib, BASELINE_MIB + TYPE_STRIPPING_MIB);
});

test("the SDKs a config loads on use count once each; orgs add their sources' buffers", () => {
  const s3 = elf({}, { state: { store: "s3", s3: { bucket: "b", key: "k" } } });
  assert.equal(memoryModel(s3).modules_mib, MODULE_MIB.s3);
  const twoOrgs = validateConfig({
    orgs: [
      { name: "a", salesforce, sources: { eventlogfile: { enabled: true, event_types: ["API"] } } },
      { name: "b", salesforce, sources: { eventlogfile: { enabled: true, event_types: ["API"] } } },
    ],
    sink: { loki: { url: "http://127.0.0.1:9/loki/api/v1/push" } },
  });
  const one = memoryModel(elf());
  const two = memoryModel(twoOrgs);
  assert.equal(two.live_by_part.eventlogfile, 2 * one.live_by_part.eventlogfile!);
  // Orgs share the pipeline's lanes: the queues do not double.
  assert.equal(two.live_by_part["lane queues"], one.live_by_part["lane queues"]);
});

test("enrich.users adds its bounded cache per org to the live data", () => {
  const off = memoryModel(elf());
  const withUsers = memoryModel(elf({}, { enrich: { users: { enabled: true, max_users: 20_000 } } }));
  assert.equal(off.live_by_part["enrich.users"], undefined);
  assert.equal(withUsers.live_by_part["enrich.users"], Math.round((20_000 * 500 * 10) / 2 ** 20) / 10);
  assert.ok(withUsers.total_mib > off.total_mib);
});

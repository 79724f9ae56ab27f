// sink.type otlp (#28): the key is live, each org can have its own OTLP destination under the same
// inheritance rule as orgs[].sink.loki, and a block for the sink not in use is refused by name.
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { resolveDestinations } from "../../src/config/destinations.ts";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { OtlpSink } from "../../src/sinks/otlp/sink.ts";
import { LokiSink } from "../../src/sinks/loki/sink.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { tempDir } from "../support/tmp.ts";

const OTLP_A = "http://127.0.0.1:3100/otlp/v1/logs";
const OTLP_B = "http://127.0.0.1:4318/v1/logs";
const SF = { client_id: "x", username: "u", private_key: "k" };

function tree(orgs: unknown[], otlp: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    orgs,
    sink: {
      type: "otlp",
      otlp: { url: OTLP_A, tenant_id: "main", auth_token: "top", headers: { "x-a": "1" }, ...otlp },
    },
    state: { file: { path: join(tempDir(), "state.json") } },
  };
}

test("sink.type otlp needs no sink.loki.url and builds an OTLP sink; loki stays the default", () => {
  const graph = buildGraph(validateConfig({ ...tree([]), orgs: undefined, salesforce: SF }));
  assert.ok(graph.destinations[0]!.sink instanceof OtlpSink);
  // A Loki's /otlp/v1/logs has its query API beside it: the destination reconciles through it.
  assert.ok(graph.destinations[0]!.lookup, "Loki's read path: reconcile runs");
  const collector = buildGraph(
    validateConfig({
      salesforce: SF,
      sink: { type: "otlp", otlp: { url: "http://127.0.0.1:4318/v1/logs" } },
      state: { file: { path: join(tempDir(), "state.json") } },
    }),
  );
  assert.equal(collector.destinations[0]!.lookup, undefined, "a Collector: no read path, no reconcile");
  const loki = buildGraph(
    validateConfig({ salesforce: SF, sink: { loki: { url: "http://127.0.0.1:3100/loki/api/v1/push" } } }),
  );
  assert.ok(loki.destinations[0]!.sink instanceof LokiSink);
  assert.throws(
    () => validateConfig({ salesforce: SF, sink: {} }),
    (err: unknown) =>
      err instanceof ConfigError && /sink\.loki\.url: required with sink\.type loki/.test(err.message),
  );
});

test("an org's own OTLP url inherits no tenant, token or headers; an own tenant keeps the rest", () => {
  const dests = resolveDestinations(
    validateConfig(
      tree([
        { name: "prod", salesforce: SF },
        { name: "emea", salesforce: SF, sink: { otlp: { url: OTLP_B } } },
        { name: "apac", salesforce: SF, sink: { otlp: { tenant_id: "apac" } } },
      ]),
    ),
  );
  assert.deepEqual(
    dests.map((d) => [
      d.name,
      d.orgs,
      d.where,
      d.otlp.url,
      d.otlp.tenant_id,
      d.otlp.auth_token,
      d.otlp.headers,
    ]),
    [
      ["", ["prod"], "sink.otlp", OTLP_A, "main", "top", { "x-a": "1" }],
      ["emea", ["emea"], "orgs[emea].sink.otlp", OTLP_B, null, null, {}],
      ["apac", ["apac"], "orgs[apac].sink.otlp", OTLP_A, "apac", "top", { "x-a": "1" }],
    ],
  );
});

test("a destination key for the sink not in use is refused, naming the org and the key", () => {
  assert.throws(
    () =>
      validateConfig(
        tree([{ name: "emea", salesforce: SF, sink: { loki: { url: "http://x/loki/api/v1/push" } } }]),
      ),
    (err: unknown) =>
      err instanceof ConfigError &&
      /org 'emea': orgs\[\]\.sink\.loki\.url is set but sink\.type is otlp; move it to orgs\[\]\.sink\.otlp/.test(
        err.message,
      ),
  );
});

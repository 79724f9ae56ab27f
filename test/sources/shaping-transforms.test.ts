import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  InMemoryMetricExporter,
  AggregationTemporality,
  MeterProvider,
  PeriodicExportingMetricReader,
} from "@opentelemetry/sdk-metrics";
import { compileTransforms, maskValue, type TransformRule } from "../../src/egress/transforms.ts";

const run = (rules: TransformRule[], payload: Record<string, unknown>, salt = "salt") => {
  const keep = compileTransforms(rules, { source: "eventlogfile", salt }).apply(payload);
  return { keep, payload };
};

describe("transforms", () => {
  it("hashes with the salt like the Python implementation (first 16 hex of SHA-256)", () => {
    // Expected values from CPython: sha256("salt" + str(value)).hexdigest()[:16].
    const { payload } = run([{ action: "hash", fields: ["USER", "FLAG", "NONE"] }], {
      USER: "alice@example.com",
      FLAG: true,
      NONE: null,
    });
    assert.deepEqual(payload, { USER: "109f0b7ded1d9414", FLAG: "1ea4bc4987686efc", NONE: null });
  });

  it("masks e-mail local parts, the last IPv4 octet, and anything else whole", () => {
    assert.equal(maskValue("alice@example.com"), "***@example.com");
    assert.equal(maskValue("10.1.2.3"), "10.1.2.x");
    assert.equal(maskValue("10.01.2.3"), "***");
    assert.equal(maskValue("256.1.1.1"), "***");
    assert.equal(maskValue("secret"), "***");
  });

  it("replaces with Python regex and replacement syntax", () => {
    const { payload } = run(
      [
        {
          action: "regex_replace",
          fields: ["URI"],
          pattern: "(?P<user>\\w+)@(\\w+)",
          replacement: "\\g<user> at \\2 $1",
        },
      ],
      { URI: "bob@corp x" },
    );
    assert.equal(payload.URI, "bob at corp $1 x"); // CPython: re.sub gives the same
  });

  it("drops fields, and drops rows only when every glob matches", () => {
    const rules: TransformRule[] = [
      { action: "drop_field", fields: ["SESSION_KEY"] },
      { action: "drop_row", match: { URI: "/services/*", METHOD: "GE?" }, name: "no-api-gets" },
    ];
    assert.deepEqual(
      run(rules, { SESSION_KEY: "k", URI: "/services/data/v60.0/query", METHOD: "GET" }).keep,
      false,
    );
    assert.deepEqual(run(rules, { URI: "/services/data", METHOD: "POST" }), {
      keep: true,
      payload: { URI: "/services/data", METHOD: "POST" },
    });
  });

  it("matches fnmatch semantics: * crosses /, [!seq], an unclosed [ is literal, null is None", () => {
    const glob = (pattern: string, value: string) =>
      run([{ action: "drop_row", match: { F: pattern } }], { F: value }).keep;
    assert.equal(glob("/a/*", "/a/b/c"), false);
    assert.equal(glob("[!x]y", "zy"), false);
    assert.equal(glob("[!x]y", "xy"), true);
    assert.equal(glob("a[b", "a[b"), false);
    assert.equal(run([{ action: "drop_row", match: { F: "None" } }], { F: null }).keep, false);
    assert.equal(run([{ action: "drop_row", match: { F: "" } }], {}).keep, false);
  });

  it("refuses invalid rules with a config error naming the rule", () => {
    assert.throws(() => compileTransforms([{ action: "hash" }], { source: "apexlog" }), {
      code: "SF2LOKI_CONFIG",
      message: /sources\.apexlog\.transforms\[0\] \(hash-0\)/,
    });
    assert.throws(() => compileTransforms([{ action: "drop_row", match: {} }], { source: "x" }), {
      code: "SF2LOKI_CONFIG",
    });
    assert.throws(
      () => compileTransforms([{ action: "regex_replace", fields: ["a"], pattern: "(" }], { source: "x" }),
      {
        code: "SF2LOKI_CONFIG",
      },
    );
    assert.throws(
      () => compileTransforms([{ action: "mask", fields: ["a"], pattern: "x" }], { source: "x" }),
      {
        code: "SF2LOKI_CONFIG",
      },
    );
  });

  it("counts dropped rows by source and rule", async () => {
    const reader = new PeriodicExportingMetricReader({
      exporter: new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE),
      exportIntervalMillis: 3_600_000,
    });
    const provider = new MeterProvider({ readers: [reader] });
    const t = compileTransforms([{ action: "drop_row", match: { A: "*" }, name: "all" }], {
      source: "eventlog_objects",
      meter: provider.getMeter("t"),
    });
    t.apply({ A: "1" });
    t.apply({ A: "2" });
    const { resourceMetrics } = await reader.collect();
    const m = resourceMetrics.scopeMetrics
      .flatMap((s) => s.metrics)
      .find((x) => x.descriptor.name === "sf2loki_rows_filtered");
    const point = m?.dataPoints[0];
    assert.equal(point?.value, 2);
    assert.deepEqual(point.attributes, { source: "eventlog_objects", rule: "all" });
    await provider.shutdown();
  });
});

import { test } from "node:test";
import assert from "node:assert/strict";
import { ConfigError } from "../../../src/errors.ts";
import { guardStaticLabels, renderLabels } from "../../../src/sinks/receiving-loki/labels.ts";
import { createLokiSink } from "../../../src/sinks/loki/sink.ts";
import { settings } from "./support.ts";

test("allowlisted static labels pass the guard", () => {
  guardStaticLabels({ job: "sf2loki", service_name: "x", environment: "prod", sf_org_id: "00D", org: "a" });
});

test("the guard names every offending key in one ConfigError", () => {
  assert.throws(
    () => {
      guardStaticLabels({ job: "sf2loki", team: "x", source: "s", event_type: "e", Host: "h" });
    },
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.equal(err.code, "SF2LOKI_CONFIG");
      for (const key of ["team", "source", "event_type", "Host"])
        assert.match(err.message, new RegExp(`\\b${key}\\b`));
      assert.match(err.message, /source \(reserved/);
      assert.doesNotMatch(err.message, /\bjob \(/);
      return true;
    },
  );
});

test("the sink runs the guard at construction, before any network use", () => {
  assert.throws(
    () => createLokiSink(settings("http://127.0.0.1:9/loki/api/v1/push", { labels: { source: "x" } })),
    {
      code: "SF2LOKI_CONFIG",
    },
  );
});

test("a push URL with inline credentials is refused as a config error", () => {
  assert.throws(
    () => createLokiSink(settings("http://user:secret@127.0.0.1:9/loki/api/v1/push")),
    (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.doesNotMatch(err.message, /secret/);
      return true;
    },
  );
});

test("labels render sorted, without spaces, escaping backslash, quote and newline", () => {
  assert.equal(renderLabels({ b: "2", a: "1" }), '{a="1",b="2"}');
  assert.equal(renderLabels({ k: 'a\\b"c\nd\te€' }), '{k="a\\\\b\\"c\\nd\te€"}');
  assert.equal(renderLabels({}), "{}");
});

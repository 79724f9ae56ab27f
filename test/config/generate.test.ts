import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";
import { loadConfig } from "../../src/config/load.ts";
import { exampleYaml, jsonSchema, referenceMarkdown } from "../../src/config/generate.ts";
import { fieldsOf, type FieldNode } from "../../src/config/walk.ts";
import { configSchema } from "../../src/config/schema.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const ROOT = new URL("../../", import.meta.url).pathname;

test("docs/config-reference.md matches the generator (run `npx sf2loki config reference > docs/config-reference.md`)", () => {
  const committed = readFileSync(join(ROOT, "docs/config-reference.md"), "utf8");
  assert.equal(committed, referenceMarkdown());
});

test("the example config loads back and validates, with its secret files mounted", async () => {
  const dir = tempDir();
  const example = writeFile(dir, "example.yaml", exampleYaml());
  const key = writeFile(dir, "key.pem", "-----BEGIN PRIVATE KEY-----\nx\n-----END PRIVATE KEY-----\n");
  const token = writeFile(dir, "loki-token", "t0k\n");
  const config = await loadConfig(example, {
    SF_CLIENT_ID: "cid",
    SF2LOKI_SALESFORCE__PRIVATE_KEY_FILE: key,
    SF2LOKI_SINK__LOKI__AUTH_TOKEN_FILE: token,
  });
  assert.equal(config.salesforce?.client_id, "cid");
  assert.equal(config.sink.loki.auth_token, "t0k");
  // Inline secrets are commented out so a placeholder never shadows a mounted *_file.
  assert.doesNotMatch(exampleYaml(), /^\s*(client_secret|private_key|auth_token): /m);
  // The multi-org alternative is present but commented out.
  assert.match(exampleYaml(), /^# orgs:$/m);
});

test("every field has a description", () => {
  const missing: string[] = [];
  const walk = (nodes: FieldNode[]): void => {
    for (const n of nodes) {
      if (!n.meta.description) missing.push(n.path);
      if (n.children) walk(n.children);
    }
  };
  walk(fieldsOf(configSchema));
  assert.deepEqual(missing, []);
});

test("the JSON Schema is draft 2020-12, titled Config, strict, and parses", () => {
  const schema = JSON.parse(jsonSchema()) as Record<string, unknown>;
  assert.equal(schema["$schema"], "https://json-schema.org/draft/2020-12/schema");
  assert.equal(schema["title"], "Config");
  assert.equal(schema["additionalProperties"], false);
  const props = schema["properties"] as Record<string, Record<string, unknown>>;
  assert.deepEqual(Object.keys(props), [
    "salesforce",
    "orgs",
    "sources",
    "sink",
    "state",
    "coordinate",
    "deadletter",
    "enrich",
    "service",
  ]);
  assert.ok(jsonSchema().endsWith("}\n"));
});

test("sink.type is a live key, not the dead one #72 removed: otlp without sink.otlp.url is refused by name", async () => {
  const sink = parse(exampleYaml()) as { sink: { type: string } };
  assert.equal(sink.sink.type, "loki");
  const dir = tempDir();
  const path = writeFile(
    dir,
    "otlp.yaml",
    "salesforce: {instance_url: https://x.my.salesforce.com, client_id: c, client_secret: s, auth_flow: client_credentials}\n" +
      "sink: {type: otlp}\n",
  );
  await assert.rejects(loadConfig(path, {}), /sink\.otlp\.url: required with sink\.type otlp/);
});

// Every preset in examples/ loads through the config loader and builds offline, as
// `sf2loki --check --config examples/<file>` does, and sets up what its name promises. The presets
// read their secrets from the Kubernetes mount (/etc/sf2loki/secrets); here that mount is a temp dir
// holding a file per secret the preset names, and each `${VAR}` it reads is set.
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { loadConfig } from "../../src/config/load.ts";
import { resolvedOrgs } from "../../src/config/orgs.ts";
import type { Config } from "../../src/config/schema.ts";
import { buildOffline } from "../../src/daemon/wiring.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const EXAMPLES = new URL("../../examples/", import.meta.url).pathname;
const MOUNT = "/etc/sf2loki/secrets/";
const PEM = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({
  type: "pkcs8",
  format: "pem",
}) as string;

async function loadExample(name: string): Promise<Config> {
  const dir = tempDir();
  const text = readFileSync(join(EXAMPLES, name), "utf8");
  for (const [, file] of text.matchAll(/\/etc\/sf2loki\/secrets\/([\w.-]+)/g))
    writeFile(dir, file!, file!.endsWith("private-key") ? PEM : "example-secret\n");
  const env = Object.fromEntries([...text.matchAll(/\$\{(\w+)\}/g)].map(([, v]) => [v!, "3MVG9example"]));
  const path = writeFile(dir, name, text.replaceAll(MOUNT, `${dir}/`));
  const config = await loadConfig(path, env);
  await buildOffline(config);
  return config;
}

/** What each preset must set up, beyond loading: the sources its name promises. */
const PROMISES: Record<string, (c: Config) => void> = {
  "local.yaml": () => undefined,
  "rtem-streaming.yaml": (c) => {
    const [org] = resolvedOrgs(c);
    assert.ok(org!.sources.pubsub.topics.length >= 3, "streams several RTEM topics");
    assert.ok(org!.sources.pubsub.topics.every((t) => t.startsWith("/event/") && t.endsWith("EventStream")));
    assert.deepEqual(
      [
        org!.sources.eventlogfile.enabled,
        org!.sources.eventlog_objects.enabled,
        org!.sources.apexlog.enabled,
      ],
      [false, false, false],
      "polls nothing",
    );
  },
  "elf-daily.yaml": (c) => {
    const [org] = resolvedOrgs(c);
    assert.equal(org!.sources.eventlogfile.enabled, true);
    assert.equal(org!.sources.eventlogfile.interval, "Daily");
    assert.deepEqual(org!.sources.pubsub.topics, [], "streams nothing");
  },
  "multi-org.yaml": (c) => {
    const orgs = resolvedOrgs(c);
    assert.deepEqual(
      orgs.map((o) => o.name),
      ["prod", "sandbox"],
    );
    assert.equal(orgs[1]!.salesforce.environment, "sandbox");
  },
};

test("examples/ holds the presets the docs point to, and nothing untested", () => {
  const files = readdirSync(EXAMPLES)
    .filter((f) => f.endsWith(".yaml"))
    .sort();
  assert.deepEqual(files, Object.keys(PROMISES).sort());
});

for (const name of Object.keys(PROMISES)) {
  test(`examples/${name} loads through the config loader, builds offline and sets up what it says`, async () => {
    PROMISES[name]!(await loadExample(name));
  });
}

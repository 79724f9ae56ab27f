import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { ConfigError } from "../../src/errors.ts";
import { loadConfig } from "../../src/config/load.ts";
import { resolveSecret } from "../../src/config/secrets.ts";
import { resolvedOrgs, selectOrg } from "../../src/config/orgs.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const FIXTURES = new URL("../fixtures/config/", import.meta.url).pathname;
const dir = tempDir();
const secrets = join(dir, "secrets");
import { mkdirSync } from "node:fs";
mkdirSync(secrets);
writeFile(secrets, "private-key", "-----BEGIN PRIVATE KEY-----\nabc\n-----END PRIVATE KEY-----\n");
writeFile(secrets, "client-secret", "  s3cret\n");
writeFile(secrets, "loki-token", "glc_token\n");
const env = {
  SECRETS: secrets,
  SF_CLIENT_ID: "cid",
  PROD_CLIENT_ID: "pcid",
  LOKI_TOKEN: "tok",
  ENV_NAME: "prod",
};

const MINIMAL = `
salesforce:
  client_id: abc
  username: u@x.com
  private_key: pem
sink:
  loki:
    url: http://127.0.0.1:3100/loki/api/v1/push
`;

async function rejects(
  path: string | undefined,
  envVars: Record<string, string>,
  pattern: RegExp,
): Promise<void> {
  await assert.rejects(loadConfig(path, envVars), (err: unknown) => {
    assert.ok(err instanceof ConfigError, `expected ConfigError, got ${String(err)}`);
    assert.match(err.message, pattern);
    return true;
  });
}

describe("Python sf2loki configs load unchanged", () => {
  for (const name of readdirSync(FIXTURES).filter((f) => f.endsWith(".yaml"))) {
    test(name, async () => {
      const config = await loadConfig(join(FIXTURES, name), env);
      assert.ok(resolvedOrgs(config).length >= 1);
    });
  }

  test("values arrive typed, defaulted and resolved", async () => {
    const c = await loadConfig(join(FIXTURES, "pubsub.yaml"), env);
    assert.equal(c.salesforce?.client_id, "cid");
    assert.equal(c.salesforce.token_ttl, 1_800_000);
    assert.match(c.salesforce.private_key ?? "", /BEGIN PRIVATE KEY/);
    assert.equal(c.sink.loki.auth_token, "glc_token");
    assert.equal(c.sink.loki.batch.flush_interval, 2000);
    assert.equal(c.sink.loki.batch.max_bytes, 1_048_576);
    assert.equal(c.sink.loki.batch.max_in_flight, 4);
    assert.equal(c.sink.loki.batch.max_uncommitted, 16);
    assert.equal(c.service.log_level, "info");
    assert.equal(c.state.s3.key, "prod/state.json");
  });

  test("derived defaults: login_url from environment, settle windows", async () => {
    const elf = await loadConfig(join(FIXTURES, "eventlogfile.yaml"), env);
    assert.equal(elf.salesforce?.login_url, "https://test.salesforce.com");
    assert.equal(elf.sources.eventlogfile.settle_window, 600_000);
    assert.deepEqual(
      elf.sources.eventlogfile.event_types.map((t) => t.name),
      ["*", "Login", "URI"],
    );
    const objs = await loadConfig(join(FIXTURES, "eventlog-objects.yaml"), env);
    const [login, , audit] = objs.sources.eventlog_objects.objects;
    assert.equal(login?.settle_window, 300_000);
    assert.equal(audit?.settle_window, 0);
    assert.equal(objs.salesforce?.client_secret, "s3cret");
  });

  test("multi-org resolves per-org secrets and names", async () => {
    const c = await loadConfig(join(FIXTURES, "multi-org.yaml"), env);
    const orgs = resolvedOrgs(c);
    assert.deepEqual(
      orgs.map((o) => [o.name, o.legacyFallback]),
      [
        ["prod", true],
        ["emea", false],
      ],
    );
    assert.equal(orgs[1]?.salesforce.client_secret, "s3cret");
    assert.equal(selectOrg(c, "emea").name, "emea");
    assert.throws(
      () => selectOrg(c, "apac"),
      /--org 'apac' is not configured; available orgs: \[prod, emea\]/,
    );
  });
});

describe("environment overrides", () => {
  test("env wins over the file and is deep-merged, keeping YAML siblings", async () => {
    const path = writeFile(dir, "env.yaml", MINIMAL + "    labels: {environment: test}\n");
    const c = await loadConfig(path, {
      SF2LOKI_SERVICE__LOG_LEVEL: "DEBUG",
      SF2LOKI_SINK__LOKI__LABELS: '{"job":"x"}',
      SF2LOKI_SINK__LOKI__BATCH__MAX_ENTRIES: "250",
      sf2loki_salesforce__api_version: "61.0",
    });
    assert.equal(c.service.log_level, "debug");
    assert.equal(c.salesforce?.client_id, "abc");
    assert.deepEqual(c.sink.loki.labels, { environment: "test", job: "x" });
    assert.equal(c.sink.loki.batch.max_entries, 250);
    assert.equal(c.salesforce.api_version, "61.0");
  });

  test("env-only configuration works; lists come as JSON", async () => {
    const c = await loadConfig(undefined, {
      SF2LOKI_SINK__LOKI__URL: "http://127.0.0.1:1/push",
      SF2LOKI_ORGS: JSON.stringify([
        { name: "a", salesforce: { client_id: "x", username: "u", private_key: "k" } },
      ]),
    });
    assert.equal(resolvedOrgs(c)[0]?.name, "a");
  });

  test("unknown top-level SF2LOKI_ vars are ignored, unknown nested ones rejected", async () => {
    const path = writeFile(dir, "env2.yaml", MINIMAL);
    await loadConfig(path, { SF2LOKI_FOO: "1", SF2LOKI_NODE_CACHE: "/x" });
    await rejects(path, { SF2LOKI_SINK__LOKI__BOGUS: "1" }, /sink\.loki\.bogus: unknown configuration key/);
  });

  test("max_uncommitted below max_in_flight is refused at load, with both values and the fix", async () => {
    const path = writeFile(dir, "env3.yaml", MINIMAL);
    await rejects(
      path,
      { SF2LOKI_SINK__LOKI__BATCH__MAX_IN_FLIGHT: "8", SF2LOKI_SINK__LOKI__BATCH__MAX_UNCOMMITTED: "4" },
      /sink\.loki\.batch\.max_uncommitted: is 4, below max_in_flight \(8\).*raise it to at least 8/,
    );
  });

  test("env values are not interpolated", async () => {
    const path = writeFile(dir, "env3.yaml", MINIMAL);
    const c = await loadConfig(path, { SF2LOKI_SINK__LOKI__TENANT_ID: "${NOPE}" });
    assert.equal(c.sink.loki.tenant_id, "${NOPE}");
  });
});

describe("interpolation", () => {
  test("replaces ${VAR} anywhere in a string, several times", async () => {
    const path = writeFile(dir, "i.yaml", MINIMAL.replace("http://127.0.0.1:3100", "http://${H}:${P}"));
    const c = await loadConfig(path, { H: "loki", P: "3100" });
    assert.equal(c.sink.loki.url, "http://loki:3100/loki/api/v1/push");
  });

  test("an undefined variable is a ConfigError naming it", async () => {
    const path = writeFile(dir, "i2.yaml", MINIMAL.replace("client_id: abc", "client_id: ${SF_ID}"));
    await rejects(path, {}, /undefined environment variable \$\{SF_ID\}/);
  });

  test("an empty variable fails min-length rules; ${X:-d} stays literal", async () => {
    const path = writeFile(dir, "i3.yaml", MINIMAL.replace("client_id: abc", 'client_id: "${EMPTY}"'));
    await rejects(path, { EMPTY: "" }, /salesforce\.client_id: /);
    const lit = writeFile(dir, "i4.yaml", MINIMAL.replace("client_id: abc", 'client_id: "${X:-d}"'));
    assert.equal((await loadConfig(lit, {})).salesforce?.client_id, "${X:-d}");
  });
});

describe("secrets", () => {
  test("a blank inline secret counts as absent, so the missing file is reported (#131)", async () => {
    const path = writeFile(
      dir,
      "s1.yaml",
      MINIMAL.replace("private_key: pem", `private_key: "  "\n  private_key_file: ${join(dir, "nope.pem")}`),
    );
    await rejects(path, {}, /cannot read salesforce private key from .*nope\.pem: ENOENT/);
  });

  test("an empty secret file is an error naming the file", async () => {
    const empty = writeFile(dir, "empty.pem", "  \n");
    const path = writeFile(dir, "s2.yaml", MINIMAL.replace("private_key: pem", `private_key_file: ${empty}`));
    await rejects(path, {}, new RegExp(`salesforce private key file ${empty} is empty`));
  });

  test("permission denied explains the uid-10001 fix", () => {
    const denied = (): string => {
      const err = new Error("EACCES: permission denied") as NodeJS.ErrnoException;
      err.code = "EACCES";
      throw err;
    };
    assert.throws(
      () => resolveSecret(null, "/etc/sf2loki/secrets/key", "salesforce private key", denied),
      /cannot read salesforce private key from \/etc\/sf2loki\/secrets\/key: permission denied; .*uid 10001.*chmod 640/,
    );
  });

  test("auth mode requirements", async () => {
    const cc = writeFile(
      dir,
      "s3.yaml",
      MINIMAL.replace(
        "username: u@x.com",
        "auth_mode: client_credentials\n  login_url: https://acme.my.salesforce.com",
      ),
    );
    await rejects(cc, {}, /client secret required for auth_mode=client_credentials/);
    const jwt = writeFile(dir, "s4.yaml", MINIMAL.replace("  private_key: pem\n", ""));
    await rejects(jwt, {}, /private key required for auth_mode=jwt_bearer/);
  });
});

describe("validation", () => {
  test("unknown keys are rejected at the top and nested levels, with the dotted path", async () => {
    const top = writeFile(dir, "u1.yaml", MINIMAL + "bogus: 1\n");
    await rejects(top, {}, /^invalid configuration:\n {2}bogus: unknown configuration key/);
    const nested = writeFile(
      dir,
      "u2.yaml",
      MINIMAL + "sources:\n  eventlogfile:\n    event_type: [Login]\n",
    );
    await rejects(
      nested,
      {},
      / {2}sources\.eventlogfile\.event_type: unknown configuration key \(check for typos/,
    );
  });

  test("one line per problem", async () => {
    const path = writeFile(
      dir,
      "v1.yaml",
      MINIMAL + "    batch: {flush_interval: 5x, queue_maxsize: 10}\nservice: {log_level: loud}\n",
    );
    await assert.rejects(loadConfig(path, {}), (err: Error) => {
      const lines = err.message.split("\n");
      assert.equal(lines[0], "invalid configuration:");
      assert.ok(lines.some((l) => l.startsWith("  sink.loki.batch.flush_interval: invalid duration")));
      assert.ok(lines.some((l) => l.startsWith("  sink.loki.batch.queue_maxsize: ")));
      assert.ok(lines.some((l) => l.startsWith("  service.log_level: ")));
      return true;
    });
  });

  test("org topology rules", async () => {
    const both = writeFile(
      dir,
      "o1.yaml",
      MINIMAL + "orgs: [{name: a, salesforce: {client_id: x, username: u, private_key: k}}]\n",
    );
    await rejects(both, {}, /set EITHER top-level 'salesforce'/);
    await rejects(writeFile(dir, "o2.yaml", "sink: {loki: {url: x}}\n"), {}, /no Salesforce org configured/);
    const org = "{name: a, salesforce: {client_id: x, username: u, private_key: k}}";
    const dup = writeFile(dir, "o3.yaml", `sink: {loki: {url: x}}\norgs: [${org}, ${org}]\n`);
    await rejects(dup, {}, /duplicate org name\(s\) \[a\]/);
    const labels = writeFile(
      dir,
      "o4.yaml",
      `sink: {loki: {url: x, labels: {environment: prod}}}\norgs: [${org}]\n`,
    );
    await rejects(
      labels,
      {},
      /sink\.loki\.labels\.environment: static label 'environment' is not allowed with 'orgs'/,
    );
    const srcs = writeFile(
      dir,
      "o5.yaml",
      `sink: {loki: {url: x}}\norgs: [${org}]\nsources: {apexlog: {enabled: true}}\n`,
    );
    await rejects(srcs, {}, /top-level 'sources' cannot be combined with 'orgs'/);
  });

  test("lease timing, token ttl floor, transform rules, promoted labels", async () => {
    await rejects(
      writeFile(dir, "t1.yaml", MINIMAL + "coordinate: {file_lease: {ttl: 10s, renew_interval: 5s}}\n"),
      {},
      /coordinate\.file_lease\.renew_interval: 2 × renew_interval \(5s\) must be less than ttl \(10s\)/,
    );
    await rejects(
      writeFile(dir, "t2.yaml", MINIMAL.replace("private_key: pem", "private_key: pem\n  token_ttl: 60s")),
      {},
      /salesforce\.token_ttl: must be at least 2m/,
    );
    await rejects(
      writeFile(dir, "t3.yaml", MINIMAL + "sources: {pubsub: {transforms: [{action: hash}]}}\n"),
      {},
      /sources\.pubsub\.transforms\.0\.fields: hash needs a non-empty fields list/,
    );
    await rejects(
      writeFile(
        dir,
        "t4.yaml",
        MINIMAL + "sources: {eventlogfile: {event_types: [{name: X, labels: [org]}]}}\n",
      ),
      {},
      /sources\.eventlogfile\.event_types\.0\.labels\.0: must not be one of/,
    );
    await rejects(
      writeFile(dir, "t5.yaml", MINIMAL + "state: {store: s3}\n"),
      {},
      /state\.s3\.bucket: state\.store is 's3' but state\.s3\.bucket is empty/,
    );
  });

  test("YAML syntax errors name the file, line and column", async () => {
    const path = writeFile(dir, "bad.yaml", "sink:\n  loki:\n    url: [unclosed\n");
    await rejects(path, {}, /cannot parse config file .*bad\.yaml \(line \d+, column \d+\)/);
    await rejects(writeFile(dir, "list.yaml", "- a\n- b\n"), {}, /must be a YAML mapping/);
    await rejects(join(dir, "missing.yaml"), {}, /cannot read config file .*missing\.yaml: no such file/);
  });
});

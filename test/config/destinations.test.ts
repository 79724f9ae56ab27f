// Per-org Loki destinations (#123): which orgs share a destination, what an override inherits, and
// what `--check` says about a broken override (exit 2, naming the org).
import { test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { resolveDestinations } from "../../src/config/destinations.ts";
import { validateConfig } from "../../src/config/load.ts";
import { buildGraph } from "../../src/daemon/wiring.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const URL_A = "http://127.0.0.1:3100/loki/api/v1/push";
const URL_B = "http://127.0.0.1:3200/loki/api/v1/push";

function org(name: string, sink?: unknown): Record<string, unknown> {
  return {
    name,
    salesforce: { client_id: "x", username: "u", private_key: "k" },
    ...(sink ? { sink: { loki: sink } } : {}),
  };
}

function tree(orgs: unknown[], loki: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    orgs,
    sink: { loki: { url: URL_A, tenant_id: "main", auth_token: "top-token", ...loki } },
    state: { file: { path: join(tempDir(), "state.json") } },
  };
}

test("orgs without overrides share the top-level destination; single-org has only it", () => {
  const multi = resolveDestinations(validateConfig(tree([org("prod"), org("emea")])));
  assert.equal(multi.length, 1);
  assert.deepEqual(multi[0]!.orgs, ["prod", "emea"]);
  assert.equal(multi[0]!.budgetKey, "egress:budget");
  const single = resolveDestinations(
    validateConfig({
      salesforce: { client_id: "x", username: "u", private_key: "k" },
      sink: { loki: { url: URL_A } },
    }),
  );
  assert.deepEqual(
    single.map((d) => [d.name, d.orgs]),
    [["", [""]]],
  );
});

test("an own tenant on the same URL keeps the top-level credentials; an own URL inherits none", () => {
  const config = validateConfig(
    tree(
      [
        org("prod"),
        org("emea", { tenant_id: "emea" }),
        org("apac", { url: URL_B }),
        org("latam", { tenant_id: "main" }),
      ],
      { egress: { max_lines_per_second: 500 } },
    ),
  );
  const [main, emea, apac, ...rest] = resolveDestinations(config);
  assert.equal(rest.length, 0, "latam resolves to the top-level destination");
  assert.deepEqual(main!.orgs, ["prod", "latam"]);
  assert.deepEqual(
    [emea!.name, emea!.loki.url, emea!.loki.tenant_id, emea!.loki.auth_token, emea!.budgetKey],
    ["emea", URL_A, "emea", "top-token", "egress:budget:emea"],
  );
  assert.deepEqual(
    [apac!.loki.url, apac!.loki.tenant_id, apac!.loki.auth_token, apac!.loki.auth],
    [URL_B, null, null, "basic"],
    "a different Loki is never sent the top-level token",
  );
  assert.equal(apac!.loki.egress.max_lines_per_second, 500, "egress limits are inherited key by key");
});

test("orgs sharing an own destination share it; their egress limits must agree", () => {
  const shared = validateConfig(
    tree([
      org("emea", { tenant_id: "t2", egress: { daily_byte_budget: 1000 } }),
      org("apac", { tenant_id: "t2" }),
    ]),
  );
  assert.throws(
    () => resolveDestinations(shared),
    /org 'apac': orgs\[\]\.sink\.loki\.egress differs from that of org 'emea'/,
  );
  const agreed = validateConfig(
    tree([
      org("emea", { tenant_id: "t2", egress: { daily_byte_budget: 1000 } }),
      org("apac", { tenant_id: "t2", egress: { daily_byte_budget: 1000 } }),
    ]),
  );
  const dests = resolveDestinations(agreed);
  assert.deepEqual(
    dests.map((d) => [d.name, d.orgs]),
    [
      ["", []],
      ["emea", ["emea", "apac"]],
    ],
  );
  assert.throws(
    () => resolveDestinations(validateConfig(tree([org("prod", { egress: { daily_byte_budget: 5 } })]))),
    /org 'prod'.*the top-level sink\.loki/,
  );
});

test("an org's auth_token_file is read like sink.loki's, and its errors name the org", () => {
  const dir = tempDir();
  const file = writeFile(dir, "emea-token", "emea-secret\n");
  const config = validateConfig(tree([org("emea", { tenant_id: "emea", auth_token_file: file })]));
  assert.equal(resolveDestinations(config)[1]!.loki.auth_token, "emea-secret");
  assert.throws(
    () => validateConfig(tree([org("emea", { auth_token_file: join(dir, "missing") })])),
    /org 'emea': cannot read orgs\[\]\.sink\.loki\.auth_token from .*missing/,
  );
});

test("a broken override fails the offline build naming the org", () => {
  assert.throws(
    () => buildGraph(validateConfig(tree([org("prod"), org("emea", { url: "not a url" })]))),
    /orgs\[emea\]\.sink\.loki\.url is not a valid URL/,
  );
  assert.throws(
    () => buildGraph(validateConfig(tree([org("emea", { auth: "bearer", url: URL_B })]))),
    /orgs\[emea\]\.sink\.loki\.auth is bearer but no auth_token is set; set orgs\[emea\]\.sink\.loki\.auth_token/,
  );
  assert.throws(
    () => validateConfig(tree([org("emea", { tenant: "x" })])),
    /orgs\.0\.sink\.loki\.tenant: unknown configuration key/,
  );
});

test("--check exits 2 on an override URL carrying credentials, naming the org", async () => {
  const dir = tempDir();
  const yaml = `
orgs:
  - name: prod
    salesforce: {client_id: x, username: u, private_key: k}
  - name: emea
    salesforce: {client_id: x, username: u, private_key: k}
    sink:
      loki:
        url: https://user:pass@logs.example.com/loki/api/v1/push
sink:
  loki:
    url: ${URL_A}
state: {file: {path: ${join(dir, "state.json")}}}
`;
  const res = await cli(["--check", "--config", writeFile(dir, "c.yaml", yaml)]);
  assert.equal(res.code, 2);
  assert.match(
    res.stderr,
    /config check FAILED: orgs\[emea\]\.sink\.loki\.url carries credentials; move them to orgs\[emea\]\.sink\.loki\.tenant_id/,
  );
  assert.doesNotMatch(res.stderr, /pass/, "the credentials are not echoed");
  const ok = yaml.replace("user:pass@", "");
  assert.equal((await cli(["--check", "--config", writeFile(dir, "ok.yaml", ok)])).code, 0);
});

// What `--check` (and so every start) says about the proxy variables and the `tls:` files: a malformed
// HTTPS_PROXY and a tls file that is missing, not PEM or not the certificate's key each exit 2 with one
// line naming the variable or key and what to do; an org with its own Loki url keeps the top-level
// CA bundle but not its client certificate.
import assert from "node:assert/strict";
import { join } from "node:path";
import { test } from "node:test";
import { resolveDestinations } from "../../src/config/destinations.ts";
import { validateConfig } from "../../src/config/load.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";
import { TLS_FILES } from "../support/tls-front.ts";

function config(dir: string, tls = ""): string {
  return writeFile(
    dir,
    "c.yaml",
    `
salesforce: {client_id: x, username: u, private_key: k}
sink:
  loki:
    url: https://logs.example.com/loki/api/v1/push
${tls}
state: {file: {path: ${join(dir, "state.json")}}}
`,
  );
}

test("--check exits 2 on a malformed HTTPS_PROXY, naming it, its password never echoed", async () => {
  const path = config(tempDir());
  const res = await cli(["--check", "--config", path], { HTTPS_PROXY: "http://svc:hunter2@proxy corp:3128" });
  assert.equal(res.code, 2, res.stderr);
  assert.match(
    res.stderr,
    /HTTPS_PROXY is not a URL \(http:\/\/\*\*\*@proxy corp:3128\); set it to http:\/\/host:port/,
  );
  assert.doesNotMatch(res.stderr, /hunter2/);
  assert.equal((await cli(["--check", "--config", path], { HTTPS_PROXY: "http://proxy:3128" })).code, 0);
});

// Every form an operator writes by hand (#34): no scheme, a `/` or an `@` in the password, a user
// alone. The value does not parse, so redaction cannot lean on the parser.
const CREDENTIALED_BAD = [
  ["user:s3cret@proxy:31x8", "***@proxy:31x8"],
  ["http://user:pa/ss3cret@proxy:3128", "http://***@proxy:3128"],
  ["http://us@er:p@ss3cret@proxy:31x8", "http://***@proxy:31x8"],
  ["https://s3cret@proxy corp:3128", "https://***@proxy corp:3128"],
  ["svc:s3cret/x@@proxy", "***@proxy"],
] as const;

test("--check and a daemon start never echo a proxy password, parsed or not, on stdout or stderr", async () => {
  const path = config(tempDir());
  for (const [value, shown] of CREDENTIALED_BAD) {
    for (const args of [
      ["--check", "--config", path],
      ["--config", path],
    ]) {
      const res = await cli(args, { HTTPS_PROXY: value });
      const said = `${res.stdout}\n${res.stderr}`;
      assert.equal(res.code, 2, `${value} ${args.join(" ")}: ${said}`);
      assert.ok(res.stderr.includes(`HTTPS_PROXY is not a URL (${shown})`), `${value}: ${said}`);
      assert.doesNotMatch(said, /s3cret|pa\/ss/, `${value} ${args.join(" ")}`);
    }
  }
});

test("--check and a daemon start refuse an https:// proxy Pub/Sub would cross, in one line, and accept it exempted", async () => {
  const dir = tempDir();
  const path = config(dir, "sources: {pubsub: {topics: [/event/LoginEventStream]}}");
  const env = { HTTPS_PROXY: "https://svc:s3cret@proxy.corp:3129" };
  for (const args of [
    ["--check", "--config", path],
    ["--config", path],
  ]) {
    const res = await cli(args, env);
    const said = `${res.stdout}\n${res.stderr}`;
    assert.equal(res.code, 2, said);
    const lines = res.stderr.trim().split("\n");
    assert.equal(lines.length, 1, said);
    assert.match(lines[0]!, /HTTPS_PROXY names an https:\/\/ proxy \(https:\/\/proxy\.corp:3129\)/);
    assert.match(
      lines[0]!,
      /set HTTPS_PROXY to http:\/\/proxy\.corp:3129, or add api\.pubsub\.salesforce\.com to NO_PROXY/,
    );
    assert.doesNotMatch(said, /s3cret/);
  }
  const exempt = await cli(["--check", "--config", path], { ...env, NO_PROXY: ".salesforce.com" });
  assert.equal(exempt.code, 0, exempt.stderr);
  // Without Pub/Sub topics the https proxy serves the HTTP clients alone, which tunnel through it.
  assert.equal((await cli(["--check", "--config", config(tempDir())], env)).code, 0);
});

test("--check exits 2 on a tls file that is missing, not a certificate, half a pair, or not the pair's key", async () => {
  const dir = tempDir();
  const notPem = writeFile(dir, "not.pem", "hello\n");
  const cases: [string, RegExp][] = [
    [
      `      ca_file: ${join(dir, "nope.pem")}`,
      /cannot read sink\.loki\.tls\.ca_file \S+nope\.pem \(no such file\); point it at a PEM file of the CA certificate\(s\)/,
    ],
    [`      ca_file: ${notPem}`, /sink\.loki\.tls\.ca_file \S+not\.pem holds no PEM certificate/],
    [
      `      cert_file: ${TLS_FILES.clientCert}`,
      /sink\.loki\.tls\.cert_file is set without sink\.loki\.tls\.key_file; a client certificate needs both, or neither/,
    ],
    [
      `      cert_file: ${TLS_FILES.clientCert}\n      key_file: ${TLS_FILES.serverKey}`,
      /sink\.loki\.tls\.key_file \S+server-key\.pem is not the key of sink\.loki\.tls\.cert_file/,
    ],
  ];
  for (const [keys, message] of cases) {
    const res = await cli(["--check", "--config", config(dir, `    tls:\n${keys}`)]);
    assert.equal(res.code, 2, keys);
    assert.match(res.stderr, message);
    assert.equal(res.stderr.trimEnd().split("\n").length, 1, res.stderr);
  }
  const ok = `    tls:\n      ca_file: ${TLS_FILES.ca}\n      cert_file: ${TLS_FILES.clientCert}\n      key_file: ${TLS_FILES.clientKey}`;
  assert.equal((await cli(["--check", "--config", config(dir, ok)])).code, 0);
});

test("an org with its own Loki url keeps the top-level ca_file but presents no client certificate", () => {
  const org = (name: string, loki?: unknown) => ({
    name,
    salesforce: { client_id: "x", username: "u", private_key: "k" },
    ...(loki ? { sink: { loki } } : {}),
  });
  const tls = { ca_file: TLS_FILES.ca, cert_file: TLS_FILES.clientCert, key_file: TLS_FILES.clientKey };
  const [main, own] = resolveDestinations(
    validateConfig({
      orgs: [org("prod"), org("emea", { url: "https://emea.example/loki/api/v1/push" })],
      sink: { loki: { url: "https://logs.example.com/loki/api/v1/push", tls } },
    }),
  );
  assert.deepEqual(main!.loki.tls, tls);
  assert.deepEqual(own!.loki.tls, { ca_file: TLS_FILES.ca, cert_file: null, key_file: null });
});

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

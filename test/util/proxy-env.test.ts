// What the proxy variables mean (src/util/proxy-env.ts): which proxy a URL goes through, NO_PROXY's
// forms as curl and httpx read them, the lower-case name winning, and a malformed value refused at
// start with one line naming the variable, never echoing its password.
import assert from "node:assert/strict";
import { test } from "node:test";
import { ConfigError } from "../../src/errors.ts";
import { describeProxyEnv, proxyFor, readProxyEnv } from "../../src/util/proxy-env.ts";

const P = "http://proxy.corp:3128";

function via(target: string, env: NodeJS.ProcessEnv): string | undefined {
  return proxyFor(target, readProxyEnv(env))?.href;
}

test("the target's scheme picks the variable, with no fallback from one to the other", () => {
  const env = { HTTPS_PROXY: P, HTTP_PROXY: "http://other:8080" };
  assert.equal(via("https://login.salesforce.com/services/oauth2/token", env), `${P}/`);
  assert.equal(via("http://loki:3100/loki/api/v1/push", env), "http://other:8080/");
  assert.equal(
    via("http://loki:3100/", { HTTPS_PROXY: P }),
    undefined,
    "http goes direct without HTTP_PROXY",
  );
  assert.equal(
    via("https://x.example/", { HTTP_PROXY: P }),
    undefined,
    "https goes direct without HTTPS_PROXY",
  );
  assert.equal(via("https://x.example/", {}), undefined);
});

test("either case is read; when both are set the lower-case one wins; blank counts as unset", () => {
  assert.equal(via("https://x.example/", { https_proxy: P }), `${P}/`);
  assert.equal(via("https://x.example/", { HTTPS_PROXY: "http://upper:1", https_proxy: P }), `${P}/`);
  assert.equal(via("https://x.example/", { HTTPS_PROXY: P, https_proxy: "  " }), `${P}/`);
  const env = readProxyEnv({ HTTPS_PROXY: P, NO_PROXY: "a.example", no_proxy: "b.example" });
  assert.equal(proxyFor("https://a.example/", env)?.href, `${P}/`);
  assert.equal(proxyFor("https://b.example/", env), undefined);
});

test("NO_PROXY: hosts, domains with their subdomains, host:port, *, IPs and CIDR ranges", () => {
  const env = {
    HTTPS_PROXY: P,
    HTTP_PROXY: P,
    NO_PROXY:
      " localhost, .svc.cluster.local ,internal.example,*.corp.example, loki:3100, 10.0.0.0/8, [::1], 192.168.1.7",
  };
  const direct = [
    "http://localhost:3100/",
    "http://LOCALHOST./",
    "https://loki.monitoring.svc.cluster.local/",
    "https://svc.cluster.local/",
    "https://internal.example/",
    "https://api.internal.example/",
    "https://a.b.corp.example/",
    "http://loki:3100/push",
    "http://10.1.2.3:9000/",
    "http://[::1]:8080/",
    "https://192.168.1.7/",
  ];
  for (const url of direct) assert.equal(via(url, env), undefined, url);
  const proxied = [
    "https://login.salesforce.com/",
    "https://notinternal.example/",
    "http://loki:3101/push",
    "http://11.0.0.1/",
    "https://192.168.1.70/",
    "http://[::2]/",
  ];
  for (const url of proxied) assert.equal(via(url, env), `${P}/`, url);
  assert.equal(via("https://anything/", { HTTPS_PROXY: P, NO_PROXY: "*" }), undefined);
  assert.equal(
    via("https://a.example/", { HTTPS_PROXY: P, NO_PROXY: "*:80" }),
    `${P}/`,
    "* on one port only",
  );
  assert.equal(via("https://a.example:443/", { HTTPS_PROXY: P, NO_PROXY: "a.example:443" }), undefined);
  // A name is never matched against an address's digits: 0.0.1 is no domain of 10.0.0.1.
  assert.equal(via("http://10.0.0.1/", { HTTP_PROXY: P, NO_PROXY: "0.0.1" }), `${P}/`);
});

test("a proxy without a scheme is http, as curl reads it; credentials stay in the URL", () => {
  assert.equal(via("https://x.example/", { HTTPS_PROXY: "proxy.corp:3128" }), "http://proxy.corp:3128/");
  assert.equal(
    via("https://x.example/", { HTTPS_PROXY: "http://u:p%40ss@proxy:8080" }),
    "http://u:p%40ss@proxy:8080/",
  );
});

test("a malformed proxy fails with one line naming the variable and the fix, its password hidden", () => {
  const cases: [NodeJS.ProcessEnv, RegExp][] = [
    [
      { HTTPS_PROXY: "http://user:hunter2@bad host:80" },
      /^HTTPS_PROXY is not a URL \(http:\/\/\*\*\*@bad host:80\); set it to http:\/\/host:port/,
    ],
    [
      { https_proxy: "socks5://proxy:1080" },
      /^https_proxy names a socks5:\/\/ proxy; sf2loki speaks to http:\/\/ and https:\/\/ proxies only/,
    ],
    [{ HTTP_PROXY: "http://:8080" }, /^HTTP_PROXY is not a URL/],
    [
      { HTTPS_PROXY: P, NO_PROXY: "10.0.0.0/40" },
      /^NO_PROXY holds 10\.0\.0\.0\/40, not a CIDR range; write it as address\/bits/,
    ],
  ];
  for (const [env, message] of cases) {
    assert.throws(
      () => readProxyEnv(env),
      (err: unknown) =>
        err instanceof ConfigError &&
        message.test(err.message) &&
        !err.message.includes("\n") &&
        !/hunter2/.test(err.message),
      JSON.stringify(env),
    );
  }
});

test("the start-up description names each proxy without its credentials, and NO_PROXY", () => {
  assert.equal(
    describeProxyEnv(readProxyEnv({ NO_PROXY: "localhost" })),
    undefined,
    "no proxy, nothing to say",
  );
  const described = describeProxyEnv(
    readProxyEnv({ HTTPS_PROXY: "http://svc:s3cret@proxy.corp:3128", NO_PROXY: "localhost,.svc" }),
  );
  assert.deepEqual(described, {
    https_proxy: "http://proxy.corp:3128 (with credentials)",
    http_proxy: "none (direct)",
    no_proxy: "localhost,.svc",
  });
});

// `sf2loki sim --orgs N`: N orgs behind one simulated instance, and a multi-org config that validates
// and names each org's own client. Run as the real bin (it serves until a signal).
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { once } from "node:events";
import { test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { resolvedOrgs } from "../../src/config/orgs.ts";

const BIN = new URL("../../bin/sf2loki.js", import.meta.url).pathname;

interface Printed {
  login_url: string;
  pubsub_endpoint: string;
  stats_url: string;
  orgs: { name: string; org_id: string; client_id: string }[];
  config: Record<string, unknown>;
  sharding_coordinate_example: { sharding: { enabled: boolean } };
}

test("sim --orgs 3 prints a valid multi-org config, one client per org on one instance", async (t) => {
  const child = spawn(process.execPath, [BIN, "sim", "--orgs", "3", "--events", "5"], {
    stdio: ["ignore", "pipe", "pipe"],
  });
  t.after(() => {
    if (child.exitCode === null) child.kill("SIGKILL");
  });
  let out = "";
  child.stdout.setEncoding("utf8");
  const firstLine = new Promise<string>((resolve, reject) => {
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
      if (out.includes("\n")) resolve(out.slice(0, out.indexOf("\n")));
    });
    child.once("exit", (code) => {
      reject(new Error(`sim exited ${code} before printing`));
    });
  });
  const printed = JSON.parse(await firstLine) as Printed;

  assert.deepEqual(
    printed.orgs.map((o) => o.name),
    ["org1", "org2", "org3"],
  );
  assert.equal(new Set(printed.orgs.map((o) => o.client_id)).size, 3);
  assert.equal(new Set(printed.orgs.map((o) => o.org_id)).size, 3);
  const orgs = resolvedOrgs(validateConfig(printed.config));
  assert.deepEqual(
    orgs.map((o) => [o.name, o.salesforce.client_id, o.salesforce.login_url, o.sources.pubsub.endpoint]),
    printed.orgs.map((o) => [o.name, o.client_id, printed.login_url, printed.pubsub_endpoint]),
  );
  assert.equal(printed.sharding_coordinate_example.sharding.enabled, true);

  const stats = (await (await fetch(printed.stats_url)).json()) as {
    orgs: Record<string, Record<string, object | undefined> | undefined>;
  };
  assert.deepEqual(Object.keys(stats.orgs), ["org1", "org2", "org3"]);
  assert.deepEqual(stats.orgs.org2?.LoginEventStream, {
    emitted: 5,
    delivered: 0,
    duplicates: 0,
    missing: 5,
    misfiled: 0,
  });

  child.kill("SIGTERM");
  const [code] = (await once(child, "exit")) as [number | null];
  assert.equal(code, 0);
});

// `sf2loki state` against the Azure store on Azurite, through the same config and wiring the daemon
// uses: moving a document from the file store to Azure with export/import, and the operator messages.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { Azurite } from "../support/azurite.ts";
import { AzuriteProxy } from "../support/azurite-proxy.ts";
import { cli } from "../support/cli.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const BASE =
  "salesforce: {client_id: a, username: u, private_key: k}\nsink: {loki: {url: 'http://127.0.0.1:1/push'}}\n";
const BLOB = "sf2loki/state.json";
const LEASE = "sf2loki/leader.lease";

describe("sf2loki state with state.store: azure", () => {
  let azurite: Azurite;
  let proxy: AzuriteProxy;
  let n = 0;

  before(async () => {
    azurite = await Azurite.start();
    proxy = new AzuriteProxy(azurite);
    await proxy.start();
  });
  after(async () => {
    await proxy.close();
    await azurite.stop();
  });

  /** A fresh container and a config naming it, the connection string in a secret file. */
  function azureConfig(extra = ""): { config: string; container: string; dir: string } {
    const container = `cli-${++n}`;
    proxy.createContainer(container);
    const dir = tempDir();
    const secret = writeFile(dir, "azure-cs", `${proxy.connectionString}\n`);
    const location = `{container: ${container}, credential: connection_string, connection_string_file: ${secret}}`;
    const config = writeFile(
      dir,
      "azure.yaml",
      `${BASE}state: {store: azure, azure: ${location}}\n${extra.replaceAll("LOCATION", location)}`,
    );
    return { config, container, dir };
  }

  test("file → Azure: export from the file store, import into the blob, show and export it back", async () => {
    const dir = tempDir();
    const fileConfig = writeFile(
      dir,
      "file.yaml",
      `${BASE}state: {file: {path: ${join(dir, "state.json")}}}\n`,
    );
    assert.equal((await cli(["state", "set", "apexlog", '{"last_ts":"x"}', "--config", fileConfig])).code, 0);
    assert.equal(
      (await cli(["state", "set", "pubsub:/event/A", "AAAAAAAAAAE=", "--config", fileConfig])).code,
      0,
    );
    const backup = join(dir, "backup.json");
    assert.equal((await cli(["state", "export", "--output", backup, "--config", fileConfig])).code, 0);

    const { config, container } = azureConfig();
    const imported = await cli(["state", "import", backup, "--config", config]);
    assert.equal(imported.code, 0, imported.stderr);
    const stored = proxy.getObject(container, BLOB);
    assert.deepEqual(JSON.parse(String(stored?.bytes)), JSON.parse(readFileSync(backup, "utf8")));

    const show = await cli(["state", "show", "--config", config]);
    assert.equal(show.stdout, 'apexlog\t{"last_ts":"x"}\npubsub:/event/A\tAAAAAAAAAAE=\n\n2 checkpoint(s)\n');
    const again = join(dir, "again.json");
    assert.equal((await cli(["state", "export", "--output", again, "--config", config])).code, 0);
    assert.equal(readFileSync(again, "utf8"), readFileSync(backup, "utf8"));
  });

  test("import --replace is one conditional PUT that keeps the fence epoch", async () => {
    const { config, container, dir } = azureConfig();
    proxy.putObject(container, BLOB, JSON.stringify({ __fence_epoch__: "4", a: "1", b: "2" }));
    const file = writeFile(dir, "in.json", JSON.stringify({ b: "3", c: "4" }));
    const before = proxy.writes.length;
    const r = await cli(["state", "import", file, "--replace", "--config", config]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /imported 2 checkpoint\(s\) .*, removed 1/);
    const puts = proxy.requests.filter((req) => req.method === "PUT" && req.path.endsWith(BLOB));
    assert.equal(proxy.writes.length - before, 1, "exactly one PUT");
    assert.ok(puts.at(-1)?.headers["if-match"], "guarded by the ETag it read");
    assert.deepEqual(JSON.parse(String(proxy.getObject(container, BLOB)?.bytes)), {
      __fence_epoch__: "4",
      b: "3",
      c: "4",
    });
  });

  test("a missing container: exit 1, one line naming it and the az command creating it (#29)", async () => {
    const dir = tempDir();
    const secret = writeFile(dir, "azure-cs", `${proxy.connectionString}\n`);
    const config = writeFile(
      dir,
      "azure.yaml",
      `${BASE}state: {store: azure, azure: {container: no-such-container, credential: connection_string, connection_string_file: ${secret}}}\n`,
    );
    for (const args of [
      ["state", "show"],
      ["state", "set", "apexlog", "x"],
    ]) {
      const r = await cli([...args, "--config", config]);
      assert.equal(r.code, 1, r.stderr);
      assert.equal(r.stderr.trim().split("\n").length, 1, r.stderr);
      assert.match(
        r.stderr,
        /^sf2loki: \w+ on azure:\/\/devstoreaccount1\/no-such-container\/sf2loki\/state\.json failed: the container no-such-container does not exist/,
      );
      assert.match(
        r.stderr,
        /`az storage container create --account-name devstoreaccount1 --name no-such-container`/,
      );
      assert.doesNotMatch(r.stderr, /unexpected error|RequestId|\n\s+at /);
    }
  });

  test("a corrupt blob: exit 1 naming azure://account/container/blob and the az command, no stack", async () => {
    const { config, container } = azureConfig();
    proxy.putObject(container, BLOB, '{"pubsub:/event/X": "AAA');
    const r = await cli(["state", "show", "--config", config]);
    assert.equal(r.code, 1);
    // Named corrupt, never an outage: V8's "Unterminated string" once read as a dead socket (#29).
    assert.match(
      r.stderr,
      new RegExp(
        `^sf2loki: state object azure://devstoreaccount1/${container}/sf2loki/state\\.json is corrupt`,
      ),
    );
    assert.doesNotMatch(r.stderr, /did not answer/);
    assert.match(
      r.stderr,
      new RegExp(
        `az storage blob delete --account-name devstoreaccount1 --container-name ${container} --name`,
      ),
    );
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  test("under azure_lease a live lease blob refuses a change, naming its holder", async () => {
    const { config, container } = azureConfig("coordinate: {type: azure_lease, azure_lease: LOCATION}\n");
    proxy.putObject(
      container,
      LEASE,
      JSON.stringify({ holder: "replica-a", epoch: 3, ttl_ms: 30_000, renewed_at: new Date().toISOString() }),
    );
    const refused = await cli(["state", "set", "apexlog", "x", "--config", config]);
    assert.equal(refused.code, 1);
    assert.match(
      refused.stderr,
      new RegExp(
        `the lease azure://devstoreaccount1/${container}/sf2loki/leader\\.lease is held by 'replica-a' \\(epoch 3`,
      ),
    );
    assert.equal(proxy.getObject(container, BLOB), undefined, "nothing written");
    assert.equal((await cli(["state", "set", "apexlog", "x", "--force", "--config", config])).code, 0);
  });
});

// `state.azure` and `coordinate.azure_lease`: schema rules, and the connection string resolved by the
// same secret rules as every other credential (inline wins; a blank inline reads the *_file).
import assert from "node:assert/strict";
import { join } from "node:path";
import { describe, test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { ConfigError } from "../../src/errors.ts";
import { buildStore } from "../../src/state/build.ts";
import { tempDir, writeFile } from "../support/tmp.ts";

const dir = tempDir();
const secretFile = writeFile(
  dir,
  "azure-cs",
  "  DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5;\n",
);

/** A block that takes its connection string from the secret file. */
const FROM_FILE = {
  container: "sf2loki",
  credential: "connection_string",
  connection_string_file: secretFile,
};

function tree(extra: Record<string, unknown>): Record<string, unknown> {
  return {
    salesforce: { client_id: "abc", username: "u@x.com", private_key: "pem" },
    sink: { loki: { url: "http://127.0.0.1:3100/loki/api/v1/push" } },
    ...extra,
  };
}

function configError(extra: Record<string, unknown>): string {
  try {
    validateConfig(tree(extra));
  } catch (err) {
    assert.ok(err instanceof ConfigError);
    return err.message;
  }
  return assert.fail("expected a config error");
}

describe("state.azure", () => {
  test("connection_string_file is read and trimmed; the default blob name applies", () => {
    const c = validateConfig(
      tree({
        state: {
          store: "azure",
          azure: FROM_FILE,
        },
      }),
    );
    assert.equal(
      c.state.azure.connection_string,
      "DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=a2V5;",
    );
    assert.equal(c.state.azure.blob_name, "sf2loki/state.json");
  });

  test("the default credential chain needs account_url, and reads no connection string", () => {
    assert.match(
      configError({ state: { store: "azure", azure: { container: "sf2loki" } } }),
      /state\.azure\.account_url: credential 'default' needs account_url/,
    );
    const c = validateConfig(
      tree({
        state: {
          store: "azure",
          azure: {
            container: "sf2loki",
            account_url: "https://acme.blob.core.windows.net",
            connection_string: "ignored",
          },
        },
      }),
    );
    assert.equal(c.state.azure.credential, "default");
    assert.equal(c.state.azure.connection_string, null, "never carried where it is not used");
  });

  test("cross-field rules: container required, account_url and a connection string are exclusive", () => {
    const message = configError({
      state: {
        store: "azure",
        azure: {
          credential: "connection_string",
          connection_string: "x",
          account_url: "https://acme.blob.core.windows.net",
        },
      },
    });
    assert.match(message, /state\.azure\.container: state\.store is 'azure' but the container is empty/);
    assert.match(message, /state\.azure\.account_url: credential 'connection_string' takes the endpoint/);
  });

  test("credential connection_string with neither the string nor its file: a config error when wired", () => {
    const c = validateConfig(
      tree({ state: { store: "azure", azure: { container: "sf2loki", credential: "connection_string" } } }),
    );
    assert.throws(
      () => buildStore(c.state),
      (err: unknown) =>
        err instanceof ConfigError &&
        /state\.azure\.credential is 'connection_string' but neither state\.azure\.connection_string nor state\.azure\.connection_string_file is set/.test(
          err.message,
        ),
    );
  });

  test("a stale connection_string_file is never read while another store is configured", () => {
    const c = validateConfig(
      tree({
        state: {
          store: "file",
          azure: { credential: "connection_string", connection_string_file: join(dir, "gone") },
        },
      }),
    );
    assert.equal(c.state.store, "file");
  });
});

describe("coordinate.azure_lease", () => {
  test("resolves its own connection string and keeps the lease timing rule", () => {
    const c = validateConfig(
      tree({
        coordinate: {
          type: "azure_lease",
          azure_lease: FROM_FILE,
        },
      }),
    );
    assert.equal(c.coordinate.azure_lease.blob_name, "sf2loki/leader.lease");
    assert.match(c.coordinate.azure_lease.connection_string ?? "", /^DefaultEndpointsProtocol=https;/);
    assert.match(
      configError({
        coordinate: {
          type: "azure_lease",
          azure_lease: {
            container: "sf2loki",
            account_url: "https://acme.blob.core.windows.net",
            ttl: "10s",
            renew_interval: "5s",
          },
        },
      }),
      /coordinate\.azure_lease\.renew_interval: 2 × renew_interval \(5s\) must be less than ttl \(10s\)/,
    );
  });

  test("the container is required when azure_lease is the coordinator", () => {
    assert.match(
      configError({
        coordinate: {
          type: "azure_lease",
          azure_lease: { account_url: "https://acme.blob.core.windows.net" },
        },
      }),
      /coordinate\.azure_lease\.container: coordinate\.type is 'azure_lease' but the container is empty/,
    );
  });
});

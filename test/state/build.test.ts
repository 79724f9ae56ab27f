import assert from "node:assert/strict";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, test } from "node:test";
import { ConfigError } from "../../src/errors.ts";
import { buildStore } from "../../src/state/build.ts";
import { FileCheckpointStore } from "../../src/state/file-store.ts";
import { ObjectCheckpointStore } from "../../src/state/object-store.ts";
import type { StateSettings } from "../../src/state/settings.ts";
import { tempDir } from "./helpers/temp-dir.ts";

const base: StateSettings = {
  store: "file",
  file: { path: "/nonexistent/sf2loki/state.json" },
  s3: { bucket: "", key: "sf2loki/state.json", region: null, endpoint_url: null },
  gcs: { bucket: "", object_name: "sf2loki/state.json", service_file: null },
};

describe("buildStore", () => {
  test("dispatches on state.store, offline", () => {
    const file = buildStore(base);
    assert.ok(file instanceof FileCheckpointStore);
    assert.equal(file.location, "/nonexistent/sf2loki/state.json");
    assert.equal(file.lockPath, "/nonexistent/sf2loki/state.json.lock");
    const unlocked = buildStore(base, { exclusiveLock: false });
    assert.ok(unlocked instanceof FileCheckpointStore);
    assert.equal(unlocked.lockPath, undefined);

    const s3 = buildStore({
      ...base,
      store: "s3",
      s3: { ...base.s3, bucket: "b", endpoint_url: "http://127.0.0.1:9" },
    });
    assert.ok(s3 instanceof ObjectCheckpointStore);
    assert.equal(s3.location, "s3://b/sf2loki/state.json");

    const gcs = buildStore({ ...base, store: "gcs", gcs: { ...base.gcs, bucket: "g" } });
    assert.ok(gcs instanceof ObjectCheckpointStore);
    assert.equal(gcs.location, "gs://g/sf2loki/state.json");
  });

  for (const [store, key] of [
    ["s3", "state.s3.bucket"],
    ["gcs", "state.gcs.bucket"],
  ] as const) {
    test(`a missing ${store} bucket is a ConfigError naming ${key}`, () => {
      assert.throws(
        () => buildStore({ ...base, store }),
        (e: unknown) => e instanceof ConfigError && e.code === "SF2LOKI_CONFIG" && e.message.includes(key),
      );
    });
  }

  test("an empty object key or file path is a ConfigError too", () => {
    assert.throws(() => buildStore({ ...base, store: "s3", s3: { bucket: "b", key: "" } }), /state\.s3\.key/);
    assert.throws(() => buildStore({ ...base, file: { path: " " } }), /state\.file\.path/);
    assert.throws(() => buildStore({ ...base, store: "ftp" as "file" }), ConfigError);
  });

  test("state.gcs.service_file must be a plain service-account key, checked at build time", async (t) => {
    const dir = await tempDir(t);
    const gcs = (service_file: string): StateSettings => ({
      ...base,
      store: "gcs",
      gcs: { bucket: "g", object_name: "o", service_file },
    });
    const external = join(dir, "external.json");
    await writeFile(
      external,
      JSON.stringify({ type: "external_account", credential_source: { executable: {} } }),
    );
    assert.throws(
      () => buildStore(gcs(external)),
      (e: unknown) => {
        assert.ok(e instanceof ConfigError);
        assert.match(e.message, /state\.gcs\.service_file .*external\.json is not a service-account key/);
        return true;
      },
    );
    assert.throws(() => buildStore(gcs(join(dir, "missing.json"))), /cannot be read/);
    const good = join(dir, "sa.json");
    await writeFile(good, JSON.stringify({ type: "service_account", client_email: "a@b", private_key: "k" }));
    assert.ok(buildStore(gcs(good)) instanceof ObjectCheckpointStore);
  });
});

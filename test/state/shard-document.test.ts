// coordinate.sharding's checkpoint layout: one document per org next to the shared one, seeded from
// the shared one on first use; and the config rules that gate it.
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { validateConfig } from "../../src/config/load.ts";
import { resolvedOrgs } from "../../src/config/orgs.ts";
import { ConfigError } from "../../src/errors.ts";
import { shardConfig } from "../../src/daemon/sharded-app.ts";
import { shardPath, shardSeed, shardStateSettings } from "../../src/state/shard-document.ts";

describe("shard documents", () => {
  test("the org goes before the extension of the path, key, object or blob", () => {
    assert.equal(shardPath("/var/lib/sf2loki/state.json", "acme"), "/var/lib/sf2loki/state-acme.json");
    assert.equal(shardPath("sf2loki/state.json", "acme"), "sf2loki/state-acme.json");
    assert.equal(shardPath("/data/state", "acme"), "/data/state-acme");
    assert.equal(shardPath("/data.d/state", "acme"), "/data.d/state-acme");
    assert.equal(shardPath("/data/.state", "acme"), "/data/.state-acme");
    const s = shardStateSettings(
      {
        store: "s3",
        file: { path: "/x/state.json" },
        s3: { bucket: "b", key: "sf2loki/state.json" },
        gcs: { bucket: "b", object_name: "sf2loki/state.json" },
      },
      "emea",
    );
    assert.equal(s.s3.key, "sf2loki/state-emea.json");
    assert.equal(s.gcs.object_name, "sf2loki/state-emea.json");
    assert.equal(s.file.path, "/x/state-emea.json");
    assert.equal(s.s3.bucket, "b");
  });

  test("a shard is seeded with its own org's keys; the first org also inherits the single-org keys", () => {
    const shared = {
      "org=prod:pubsub:/event/LoginEventStream": "replay-1",
      "org=emea:pubsub:/event/LoginEventStream": "replay-2",
      "org=prodx:elo:LoginEvent": "not prod's",
      "eventlog_objects:LoginEvent": "legacy",
      "egress:budget": "2026-01-01:123",
      __fence_epoch__: "9",
    };
    assert.deepEqual(shardSeed(shared, "prod", true, new Set(["egress:budget"])), {
      "org=prod:pubsub:/event/LoginEventStream": "replay-1",
      "eventlog_objects:LoginEvent": "legacy",
    });
    assert.deepEqual(shardSeed(shared, "emea", false, new Set(["egress:budget"])), {
      "org=emea:pubsub:/event/LoginEventStream": "replay-2",
    });
    // The single org (no name) takes every unprefixed key.
    assert.deepEqual(Object.keys(shardSeed(shared, "", true, new Set(["egress:budget"]))), [
      "eventlog_objects:LoginEvent",
    ]);
  });
});

const base = {
  sink: { loki: { url: "http://127.0.0.1:3100/loki/api/v1/push" } },
  orgs: [
    { name: "prod", salesforce: { client_id: "a", username: "u@x.com", private_key: "pem" } },
    { name: "emea", salesforce: { client_id: "b", username: "v@x.com", private_key: "pem" } },
  ],
};

describe("coordinate.sharding config", () => {
  test("is off by default and valid with k8s_lease", () => {
    assert.equal(validateConfig(base).coordinate.sharding.enabled, false);
    const c = validateConfig({ ...base, coordinate: { type: "k8s_lease", sharding: { enabled: true } } });
    assert.equal(c.coordinate.sharding.enabled, true);
  });

  for (const type of ["noop", "file_lease"]) {
    test(`with ${type} it is a config error that names the lease types that work`, () => {
      assert.throws(
        () => validateConfig({ ...base, coordinate: { type, sharding: { enabled: true } } }),
        (err: unknown) =>
          err instanceof ConfigError && /k8s_lease, s3_lease, gcs_lease or azure_lease/.test(err.message),
      );
    });
  }

  test("a shard's config holds only its org and points at its own document", () => {
    const c = validateConfig({
      ...base,
      state: { file: { path: "/var/lib/sf2loki/state.json" } },
      coordinate: { type: "k8s_lease", sharding: { enabled: true } },
    });
    const [, emea] = resolvedOrgs(c);
    const sc = shardConfig(c, emea!);
    assert.deepEqual(
      sc.orgs.map((o) => o.name),
      ["emea"],
    );
    assert.equal(sc.state.file.path, "/var/lib/sf2loki/state-emea.json");
    assert.equal(c.state.file.path, "/var/lib/sf2loki/state.json", "the shared config is not changed");
  });
});

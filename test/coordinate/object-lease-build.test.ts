// buildCoordinator for s3_lease, gcs_lease and azure_lease: config checks offline, then one real run per
// backend from the settings alone (the same wiring the daemon uses) against the emulators and Azurite.
import assert from "node:assert/strict";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { buildCoordinator, type BuiltCoordinator } from "../../src/coordinate/build.ts";
import { LeaseCoordinator } from "../../src/coordinate/lease/coordinator.ts";
import type {
  AzureLeaseSettings,
  GcsLeaseSettings,
  S3LeaseSettings,
} from "../../src/coordinate/object-lease/settings.ts";
import type { CoordinateSettings } from "../../src/coordinate/settings.ts";
import { ConfigError } from "../../src/errors.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { Azurite, azuriteConnectionString } from "../support/azurite.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";

const host = { hostname: "localhost", pid: 1, env: {} };
const BUCKET = "lease-bucket";
const timing = { ttl: 30_000, renew_interval: 10_000, holder_id: "" };
const s3Credentials = { credentials: { accessKeyId: "test", secretAccessKey: "test" } };

function settings(
  type: "s3_lease" | "gcs_lease",
  s3: Partial<S3LeaseSettings> = {},
  gcs: Partial<GcsLeaseSettings> = {},
): CoordinateSettings & { s3_lease: S3LeaseSettings; gcs_lease: GcsLeaseSettings } {
  return {
    type,
    file_lease: { path: "/shared/leader.lease", ...timing },
    k8s_lease: {
      namespace: "default",
      name: "sf2loki-leader",
      identity: "",
      lease_duration: 30_000,
      renew_interval: 10_000,
    },
    s3_lease: {
      bucket: BUCKET,
      key: "sf2loki/leader.lease",
      region: null,
      endpoint_url: null,
      ...timing,
      ...s3,
    },
    gcs_lease: { bucket: BUCKET, object_name: "sf2loki/leader.lease", endpoint_url: null, ...timing, ...gcs },
  };
}

function errorCode(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    return (err as { code?: string }).code;
  }
  return undefined;
}

/** Runs until the first acquisition, then stops: the coordinator releases the lease on its way out. */
async function leadOnce(c: BuiltCoordinator): Promise<string[]> {
  const ctl = new AbortController();
  const events: string[] = [];
  await c.run({
    onAcquire: () => {
      events.push("+");
      ctl.abort();
      return Promise.resolve();
    },
    onLose: () => {
      events.push("-");
      return Promise.resolve();
    },
    signal: ctl.signal,
  });
  return events;
}

describe("buildCoordinator: s3_lease and gcs_lease", () => {
  let dir: string;
  let s3: S3Emulator;
  let gcs: GcsEmulator;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), "sf2loki-object-lease-"));
    s3 = new S3Emulator({ buckets: [BUCKET] });
    gcs = new GcsEmulator({ buckets: [BUCKET] });
    await Promise.all([s3.start(), gcs.start()]);
  });

  after(async () => {
    await Promise.all([s3.close(), gcs.close()]);
    rmSync(dir, { recursive: true, force: true });
  });

  it("defaults the identity to <hostname>-<pid>-<random>, so Cloud Run's localhost / pid 1 replicas differ", () => {
    const draws = [0.25, 0.75];
    const ids = draws.map((r) => {
      const c = buildCoordinator(settings("s3_lease"), { host, clock: new ManualClock({ random: () => r }) });
      assert.ok(c instanceof LeaseCoordinator);
      return c.identity;
    });
    assert.deepEqual(ids, ["localhost-1-40000000", "localhost-1-c0000000"]);
    const fixed = buildCoordinator(settings("gcs_lease", {}, { holder_id: "replica-a" }), { host });
    assert.ok(fixed instanceof LeaseCoordinator);
    assert.equal(fixed.identity, "replica-a");
    assert.equal(fixed.epoch, 0);
    assert.throws(() => {
      fixed.checkFence();
    }, /replica-a does not hold the lease gs:\/\/lease-bucket\/sf2loki\/leader\.lease/);
  });

  it("refuses an empty bucket or key, a missing section, bad timing and a bad service_file (exit 2)", () => {
    const cases: Parameters<typeof buildCoordinator>[0][] = [
      settings("s3_lease", { bucket: "" }),
      settings("s3_lease", { key: " " }),
      settings("gcs_lease", {}, { bucket: "" }),
      settings("gcs_lease", {}, { object_name: "" }),
      settings("s3_lease", { renew_interval: 15_000 }),
      settings("gcs_lease", {}, { ttl: 0 }),
      settings("gcs_lease", {}, { service_file: join(dir, "missing.json") }),
      { ...settings("s3_lease"), s3_lease: undefined },
    ];
    writeFileSync(join(dir, "external.json"), JSON.stringify({ type: "external_account" }));
    cases.push(settings("gcs_lease", {}, { service_file: join(dir, "external.json") }));
    for (const s of cases)
      assert.equal(
        errorCode(() => buildCoordinator(s, { host })),
        "SF2LOKI_CONFIG",
      );
  });

  for (const kind of ["s3_lease", "gcs_lease"] as const) {
    it(`runs ${kind} from its settings: acquires epoch 1, then releases on stop`, async () => {
      const url = kind === "s3_lease" ? s3.url : gcs.url;
      const c = buildCoordinator(
        settings(kind, { endpoint_url: url, holder_id: "pod-7" }, { endpoint_url: url, holder_id: "pod-7" }),
        { host, clock: new ManualClock({ auto: false }), objectLease: { s3ClientConfig: s3Credentials } },
      );
      assert.deepEqual(await leadOnce(c), ["+", "-"]);
      assert.equal(c.epoch, 1);
      const emu = kind === "s3_lease" ? s3 : gcs;
      const doc = JSON.parse(emu.getObject(BUCKET, "sf2loki/leader.lease")!.bytes.toString()) as object;
      assert.deepEqual(
        { ...doc, renewed_at: undefined, acquired_at: undefined },
        { holder: "", epoch: 1, ttl_ms: 30_000, renewed_at: undefined, acquired_at: undefined },
      );
      assert.equal(emu.getObject(BUCKET, "sf2loki/leader.lease.epoch")?.bytes.toString(), "1\n");
    });
  }
});

const CONTAINER = "lease-build";
const LEASE = "sf2loki/leader.lease";

function azureSettings(
  lease: Partial<AzureLeaseSettings> | undefined,
): CoordinateSettings & { azure_lease?: AzureLeaseSettings } {
  const timing = { ttl: 30_000, renew_interval: 10_000, holder_id: "" };
  return {
    type: "azure_lease",
    file_lease: { path: "/shared/leader.lease", ...timing },
    k8s_lease: {
      namespace: "default",
      name: "l",
      identity: "",
      lease_duration: 30_000,
      renew_interval: 10_000,
    },
    ...(lease && {
      azure_lease: {
        account_url: "https://acme.blob.core.windows.net",
        container: CONTAINER,
        blob_name: LEASE,
        credential: "default",
        ...timing,
        ...lease,
      },
    }),
  };
}

describe("buildCoordinator: azure_lease", () => {
  let azurite: Azurite;

  before(async () => {
    azurite = await Azurite.start();
    azurite.sync.call({
      op: "create-container",
      connectionString: azuriteConnectionString(azurite.url),
      container: CONTAINER,
      blob: "unused",
    });
  });
  after(() => azurite.stop());

  it("builds offline and names the blob in its fence message", () => {
    const c = buildCoordinator(azureSettings({ holder_id: "replica-a" }), { host });
    assert.ok(c instanceof LeaseCoordinator);
    assert.equal(c.epoch, 0);
    assert.throws(() => {
      c.checkFence();
    }, /replica-a does not hold the lease azure:\/\/acme\/lease-build\/sf2loki\/leader\.lease/);
  });

  it("refuses a missing section, an empty container or blob name, bad timing, a missing credential", () => {
    for (const s of [
      azureSettings(undefined),
      azureSettings({ container: "" }),
      azureSettings({ blob_name: " " }),
      azureSettings({ renew_interval: 15_000 }),
      azureSettings({ account_url: null }),
      azureSettings({ credential: "connection_string" }),
    ]) {
      assert.throws(() => buildCoordinator(s, { host }), ConfigError);
    }
  });

  it("runs from its settings: acquires epoch 1, records the epoch sidecar, then releases on stop", async () => {
    const connection_string = azuriteConnectionString(azurite.url);
    const c = buildCoordinator(
      azureSettings({
        credential: "connection_string",
        account_url: null,
        connection_string,
        holder_id: "pod-7",
      }),
      { host, clock: new ManualClock({ auto: false }) },
    );
    assert.deepEqual(await leadOnce(c), ["+", "-"]);
    assert.equal(c.epoch, 1);
    const read = (blob: string) =>
      azurite.sync.call({ op: "get", connectionString: connection_string, container: CONTAINER, blob });
    const doc = JSON.parse(read(LEASE).body.toString("utf8")) as Record<string, unknown>;
    assert.deepEqual(
      { holder: doc.holder, epoch: doc.epoch, ttl_ms: doc.ttl_ms },
      { holder: "", epoch: 1, ttl_ms: 30_000 },
    );
    assert.equal(read(`${LEASE}.epoch`).body.toString("utf8"), "1\n");
  });
});

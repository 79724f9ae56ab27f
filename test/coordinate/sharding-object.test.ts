// Sharding on gcs_lease and azure_lease: the real @google-cloud/storage (objects.list) against the
// loopback GCS emulator and @azure/storage-blob (listBlobsFlat) against Azurite. The partition here is
// cut at the lease backend (its writes fail and hang); sharding-s3.test.ts and sharding-k8s.test.ts cut
// it on the wire.
import { after, afterEach, before, beforeEach, describe } from "node:test";
import type { LeaseBackend, LeaseRecord, LeaseWriteResult } from "../../src/coordinate/lease/backend.ts";
import { azureLeaseBackend, gcsLeaseBackend } from "../../src/coordinate/object-lease/build.ts";
import { objectMemberKey, objectShardKey } from "../../src/coordinate/sharding/names.ts";
import { ObjectShardSpace } from "../../src/coordinate/sharding/object-space.ts";
import { AzureBackend } from "../../src/state/azure/backend.ts";
import { GcsBackend } from "../../src/state/gcs-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { Azurite, azuriteConnectionString } from "../support/azurite.ts";
import { AzuriteProxy } from "../support/azurite-proxy.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { RENEW, ShardSim, TTL } from "./sharding-harness.ts";
import { shardingScenarios, type ShardFixture } from "./sharding-scenarios.ts";

const PREFIX = "sf2loki/leader.lease";
const TIMING = { ttl: TTL, renew_interval: RENEW, holder_id: "" };

/** A lease backend whose writes hang until aborted (the coordinator's call timeout) while `cut()`. */
function cuttable(inner: LeaseBackend, cut: () => boolean): LeaseBackend {
  return {
    kind: inner.kind,
    where: inner.where,
    confirmDelayMs: inner.confirmDelayMs,
    open: (signal) => inner.open?.(signal) ?? Promise.resolve(),
    close: () => inner.close?.() ?? Promise.resolve(),
    read: (signal) => inner.read(signal),
    readEpochFloor: (signal) => inner.readEpochFloor?.(signal) ?? Promise.resolve(undefined),
    recordEpoch: (epoch, signal) => inner.recordEpoch?.(epoch, signal) ?? Promise.resolve(),
    write: (record: LeaseRecord, expected: string | undefined, signal: AbortSignal) =>
      cut()
        ? new Promise<LeaseWriteResult>((_, reject) => {
            signal.addEventListener("abort", () => {
              reject(signal.reason as Error);
            });
          })
        : inner.write(record, expected, signal),
  };
}

interface Store {
  get(key: string): Buffer | undefined;
  put(key: string, bytes: string): void;
}

/** How one object-store family names and opens a lease object, and a plain object for list and delete. */
interface Family {
  kind: "gcs_lease" | "azure_lease";
  bucketUri: string;
  /** The lease backend of object `name`, for `replica`. */
  lease(replica: string, name: string): LeaseBackend;
  /** The store backend of object `name` (list from the prefix, conditional delete), for `replica`. */
  object(replica: string, name: string): { list: GcsBackend["list"]; delete: GcsBackend["delete"] };
}

/** Replicas whose lease writes hang while they are in `partitioned`, on `family`'s objects. */
function familySim(family: Family, partitioned: Set<string>): ShardSim {
  return new ShardSim((replica) => {
    const lister = family.object(replica, PREFIX);
    return new ObjectShardSpace({
      kind: family.kind,
      bucketUri: family.bucketUri,
      prefix: PREFIX,
      backendAt: (name) => cuttable(family.lease(replica, name), () => partitioned.has(replica)),
      list: (prefix, signal) => lister.list(prefix, signal),
      remove: (name, token, signal) => family.object(replica, name).delete(token, signal),
    });
  });
}

function objectFixture(sim: ShardSim, store: Store, partitioned: Set<string>): ShardFixture {
  const holder = (key: string): string | undefined => {
    const bytes = store.get(key);
    return bytes ? (JSON.parse(bytes.toString("utf8")) as { holder: string }).holder : undefined;
  };
  return {
    sim,
    shardHolder: (org) => holder(objectShardKey(PREFIX, org)),
    memberHolder: (replica) => holder(objectMemberKey(PREFIX, replica)),
    partition: (r) => {
      r.tracker.hanging = true;
      partitioned.add(r.name);
    },
    steal: (org, by) => {
      const at = new Date(sim.clock.now()).toISOString();
      store.put(
        objectShardKey(PREFIX, org),
        JSON.stringify({ holder: by, epoch: 99, ttl_ms: TTL, renewed_at: at, acquired_at: at }),
      );
    },
  };
}

describe("sharding on gcs_lease", () => {
  let emu: GcsEmulator;
  let fixture: ShardFixture;
  const partitioned = new Set<string>();
  const BUCKET = "lease-bucket";

  beforeEach(async () => {
    partitioned.clear();
    emu = new GcsEmulator({ buckets: [BUCKET] });
    await emu.start();
    const settings = (replica: string, object_name: string) => ({
      bucket: BUCKET,
      object_name,
      endpoint_url: emu.url,
      ...TIMING,
      holder_id: replica,
    });
    const sim = familySim(
      {
        kind: "gcs_lease",
        bucketUri: `gs://${BUCKET}`,
        lease: (replica, name) => gcsLeaseBackend(settings(replica, name), { clock: new ManualClock() }),
        object: (replica, name) =>
          new GcsBackend(settings(replica, name), { configSection: "coordinate.gcs_lease" }),
      },
      partitioned,
    );
    fixture = objectFixture(
      sim,
      {
        get: (key) => emu.getObject(BUCKET, key)?.bytes,
        put: (key, bytes) => {
          emu.putObject(BUCKET, key, bytes);
        },
      },
      partitioned,
    );
  });

  afterEach(async () => {
    partitioned.clear();
    await fixture.sim.stopAll();
    await emu.close();
  });

  shardingScenarios(() => fixture);
});

describe("sharding on azure_lease", () => {
  let azurite: Azurite;
  let emu: AzuriteProxy;
  let fixture: ShardFixture;
  let n = 0;
  const partitioned = new Set<string>();

  before(async () => {
    azurite = await Azurite.start();
  });
  after(() => azurite.stop());

  beforeEach(async () => {
    partitioned.clear();
    emu = new AzuriteProxy(azurite);
    await emu.start();
    // A fresh container per test: no membership leases left over from the previous one.
    const container = `shards-${++n}`;
    emu.createContainer(container);
    const settings = (replica: string, blob_name: string) => ({
      container,
      blob_name,
      credential: "connection_string" as const,
      connection_string: azuriteConnectionString(emu.url),
      ...TIMING,
      holder_id: replica,
    });
    const sim = familySim(
      {
        kind: "azure_lease",
        bucketUri: `azure://${container}`,
        lease: (replica, name) => azureLeaseBackend(settings(replica, name), { clock: new ManualClock() }),
        object: (replica, name) =>
          new AzureBackend(settings(replica, name), { configSection: "coordinate.azure_lease" }),
      },
      partitioned,
    );
    fixture = objectFixture(
      sim,
      {
        get: (key) => emu.getObject(container, key)?.bytes,
        put: (key, bytes) => {
          emu.putObject(container, key, bytes);
        },
      },
      partitioned,
    );
  });

  afterEach(async () => {
    partitioned.clear();
    await fixture.sim.stopAll();
    await emu.close();
  });

  shardingScenarios(() => fixture);
});

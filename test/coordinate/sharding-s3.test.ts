// Sharding on objects in one S3 bucket: the real @aws-sdk/client-s3 through the state layer's adapter
// (conditional PUTs for the leases, ListObjectsV2 for the members) against the loopback emulator.
import { after, afterEach, before, beforeEach, describe } from "node:test";
import { s3LeaseBackend } from "../../src/coordinate/object-lease/build.ts";
import { objectMemberKey, objectShardKey } from "../../src/coordinate/sharding/names.ts";
import { ObjectShardSpace } from "../../src/coordinate/sharding/object-space.ts";
import { S3Backend } from "../../src/state/s3-store.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { RENEW, ShardSim, TTL } from "./sharding-harness.ts";
import { shardingScenarios, type ShardFixture } from "./sharding-scenarios.ts";

const BUCKET = "lease-bucket";
const PREFIX = "sf2loki/leader.lease";

describe("sharding on s3_lease", () => {
  let emu: S3Emulator;
  let fixture: ShardFixture;
  /** Replicas whose requests the emulator refuses (their access key names them). */
  const partitioned = new Set<string>();

  before(async () => {
    emu = new S3Emulator({ buckets: [BUCKET] });
    await emu.start();
    emu.inject(
      (req) => partitioned.has(/Credential=key-([^/]+)\//.exec(req.headers.authorization ?? "")?.[1] ?? ""),
      { kind: "error", status: 503, code: "SlowDown" },
      Number.MAX_SAFE_INTEGER,
    );
  });
  after(async () => {
    await emu.close();
  });

  beforeEach(() => {
    partitioned.clear();
    const sim = new ShardSim((replica) => {
      const settings = {
        bucket: BUCKET,
        key: PREFIX,
        endpoint_url: emu.url,
        ttl: TTL,
        renew_interval: RENEW,
        holder_id: replica,
      };
      const s3ClientConfig = { credentials: { accessKeyId: `key-${replica}`, secretAccessKey: "x" } };
      const lister = new S3Backend(settings, s3ClientConfig);
      return new ObjectShardSpace({
        kind: "s3_lease",
        bucketUri: `s3://${BUCKET}`,
        prefix: PREFIX,
        // Each replica's own backoff clock, on auto: a retry inside one lease call costs no virtual time.
        backendAt: (key) =>
          s3LeaseBackend({ ...settings, key }, { s3ClientConfig, clock: new ManualClock() }),
        list: (prefix, signal) => lister.list(prefix, signal),
        remove: (key, token, signal) =>
          new S3Backend({ ...settings, key }, s3ClientConfig).delete(token, signal),
      });
    });
    const holder = (key: string): string | undefined => {
      const o = emu.getObject(BUCKET, key);
      return o ? (JSON.parse(o.bytes.toString("utf8")) as { holder: string }).holder : undefined;
    };
    fixture = {
      sim,
      shardHolder: (org) => holder(objectShardKey(PREFIX, org)),
      memberHolder: (replica) => holder(objectMemberKey(PREFIX, replica)),
      partition: (r) => {
        partitioned.add(r.name);
      },
      steal: (org, holder) => {
        emu.putObject(
          BUCKET,
          objectShardKey(PREFIX, org),
          JSON.stringify({
            holder,
            epoch: 99,
            ttl_ms: TTL,
            renewed_at: new Date(sim.clock.now()).toISOString(),
            acquired_at: new Date(sim.clock.now()).toISOString(),
          }),
        );
      },
    };
  });

  afterEach(async () => {
    partitioned.clear();
    await fixture.sim.stopAll();
  });

  shardingScenarios(() => fixture);
});

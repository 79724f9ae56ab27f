// The s3_lease, gcs_lease and azure_lease coordinators: the real @aws-sdk/client-s3,
// @google-cloud/storage and @azure/storage-blob clients, through the state layer's own adapters, against
// the loopback emulators (Azurite behind the fault proxy for Azure) with faults injected at the wire.
import assert from "node:assert/strict";
import { after, afterEach, before, beforeEach, describe, it } from "node:test";
import type { LeaseBackend } from "../../src/coordinate/lease/backend.ts";
import type { ObjectLeaseBackend } from "../../src/coordinate/object-lease/backend.ts";
import {
  azureLeaseBackend,
  gcsLeaseBackend,
  s3LeaseBackend,
  type ObjectLeaseDeps,
} from "../../src/coordinate/object-lease/build.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { captureLogger } from "../state/helpers/capture-logger.ts";
import { Azurite, azuriteConnectionString } from "../support/azurite.ts";
import { AzuriteProxy, blobOf } from "../support/azurite-proxy.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import {
  faults,
  type Fault,
  type ObjectStoreEmulatorServer,
  type RecordedRequest,
} from "../support/object-store-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { RENEW, Sim, TTL, type Replica } from "./harness.ts";
import { leaseScenarios, type LeaseFixture } from "./lease-scenarios.ts";

const BUCKET = "lease-bucket";
const KEY = "sf2loki/leader.lease";
const SIDECAR = `${KEY}.epoch`;
const TIMING = { ttl: TTL, renew_interval: RENEW, holder_id: "" };

/** The wire (requests, faults) and the stored objects, read and written synchronously behind the replicas' backs. */
type Emulator = ObjectStoreEmulatorServer & {
  getObject(bucket: string, name: string): { bytes: Buffer } | undefined;
  putObject(bucket: string, name: string, bytes: Buffer | string): string;
  deleteObject(bucket: string, name: string): void;
};

/** One Azurite for the file; each azure_lease test starts from an empty container. */
let azurite: Azurite | undefined;
before(async () => {
  azurite = await Azurite.start();
});
after(() => azurite?.stop());

/** What differs between S3 and GCS: the emulator, the backend, and how a request names its object. */
interface Flavour {
  name: "s3" | "gcs" | "azure";
  /** A fresh emulator, and the lease object's current ETag or generation. */
  emulator: () => { emu: Emulator; token: () => string | undefined };
  backend: (url: string, replica: string, deps: ObjectLeaseDeps) => ObjectLeaseBackend;
  /** The object a recorded request reads or writes. */
  objectOf: (req: RecordedRequest) => string | undefined;
  isWrite: (req: RecordedRequest) => boolean;
  /** "create", or the ETag / generation the write required. */
  preconditionOf: (req: RecordedRequest) => string | undefined;
  accessDenied: Fault;
  permission: RegExp;
}

const flavours: Flavour[] = [
  {
    name: "s3",
    emulator: () => {
      const emu = new S3Emulator({ buckets: [BUCKET] });
      return { emu, token: () => emu.getObject(BUCKET, KEY)?.etag };
    },
    backend: (url, replica, deps) =>
      s3LeaseBackend(
        { bucket: BUCKET, key: KEY, endpoint_url: url, ...TIMING },
        // The access key names the replica, so a recorded request says who sent it.
        { ...deps, s3ClientConfig: { credentials: { accessKeyId: `key-${replica}`, secretAccessKey: "x" } } },
      ),
    objectOf: (req) => req.path.slice(`/${BUCKET}/`.length),
    isWrite: (req) => req.method === "PUT",
    preconditionOf: (req) => (req.headers["if-none-match"] === "*" ? "create" : req.headers["if-match"]),
    accessDenied: { kind: "error", status: 403, code: "AccessDenied" },
    permission: /s3:GetObject/,
  },
  {
    name: "gcs",
    emulator: () => {
      const emu = new GcsEmulator({ buckets: [BUCKET] });
      return { emu, token: () => emu.getObject(BUCKET, KEY)?.generation };
    },
    backend: (url, _replica, deps) =>
      gcsLeaseBackend({ bucket: BUCKET, object_name: KEY, endpoint_url: url, ...TIMING }, deps),
    objectOf: (req) =>
      req.path.startsWith("/upload/")
        ? (req.query.get("name") ?? undefined)
        : /\/o\/(.+)$/.exec(req.path)?.[1],
    isWrite: (req) => req.method === "POST",
    preconditionOf: (req) => {
      const want = req.query.get("ifGenerationMatch") ?? undefined;
      return want === "0" ? "create" : want;
    },
    accessDenied: { kind: "error", status: 403, code: "forbidden" },
    permission: /storage\.objects\.get/,
  },
  {
    name: "azure",
    emulator: () => {
      assert.ok(azurite, "Azurite started in before()");
      const emu = new AzuriteProxy(azurite);
      emu.createContainer(BUCKET);
      emu.deleteObject(BUCKET, KEY);
      emu.deleteObject(BUCKET, SIDECAR);
      return { emu, token: () => emu.getObject(BUCKET, KEY)?.etag };
    },
    backend: (url, _replica, deps) =>
      azureLeaseBackend(
        {
          container: BUCKET,
          blob_name: KEY,
          credential: "connection_string",
          connection_string: azuriteConnectionString(url),
          ...TIMING,
        },
        deps,
      ),
    objectOf: (req) => blobOf(req)?.blob,
    isWrite: (req) => req.method === "PUT",
    preconditionOf: (req) => (req.headers["if-none-match"] === "*" ? "create" : req.headers["if-match"]),
    accessDenied: { kind: "error", status: 403, code: "AuthorizationPermissionMismatch" },
    permission: /Storage Blob Data Contributor role .* on that container/,
  },
];

/** Lets the first two lease reads through only together: both contenders see "absent" before either writes. */
class ReadBarrier {
  #waiting = 2;
  #open!: () => void;
  readonly #opened = new Promise<void>((resolve) => (this.#open = resolve));

  wrap(inner: LeaseBackend): LeaseBackend {
    return {
      kind: inner.kind,
      where: inner.where,
      confirmDelayMs: inner.confirmDelayMs,
      read: async (signal) => {
        const snap = await inner.read(signal);
        if (this.#waiting > 0 && --this.#waiting === 0) this.#open();
        await this.#opened;
        return snap;
      },
      write: (record, expected, signal) => inner.write(record, expected, signal),
      readEpochFloor: (signal) => inner.readEpochFloor!(signal),
      recordEpoch: (epoch, signal) => inner.recordEpoch!(epoch, signal),
      close: () => inner.close!(),
    };
  }
}

for (const f of flavours) {
  describe(`${f.name}_lease coordinator`, () => {
    let emu: Emulator;
    let token: () => string | undefined;
    let sim: Sim;
    let log: ReturnType<typeof captureLogger>;
    let barrier: ReadBarrier | undefined;
    let fixture: LeaseFixture;

    const lease = () => {
      const bytes = emu.getObject(BUCKET, KEY)?.bytes;
      return bytes && (JSON.parse(bytes.toString("utf8")) as Record<string, unknown>);
    };
    const leaseWrite = (req: RecordedRequest) => f.isWrite(req) && f.objectOf(req) === KEY;
    const leaseRead = (req: RecordedRequest) => req.method === "GET" && f.objectOf(req) === KEY;
    /** Lease requests since `from`, as W (write) and R (read). */
    const timeline = (from: number) =>
      emu.requests.slice(from).flatMap((r) => (leaseWrite(r) ? ["W"] : leaseRead(r) ? ["R"] : []));
    const intruder = (epoch: number) =>
      JSON.stringify({ holder: "intruder", epoch, ttl_ms: TTL, renewed_at: new Date().toISOString() });
    const warned = (pattern: RegExp) => log.warnings().some((l) => pattern.test(l.msg));

    beforeEach(async () => {
      ({ emu, token } = f.emulator());
      await emu.start();
      log = captureLogger();
      barrier = undefined;
      sim = new Sim((name) => {
        // Each replica's own backoff clock, on auto: a retry inside one lease call costs no virtual time.
        const backend = f.backend(emu.url, name, { clock: new ManualClock(), logger: log.logger });
        return barrier ? barrier.wrap(backend) : backend;
      });
      fixture = {
        sim,
        stored: () => {
          const doc = lease();
          assert.ok(doc, "the lease object exists");
          assert.equal(doc.ttl_ms, TTL);
          assert.match(String(doc.renewed_at), /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          return { holder: doc.holder as string, epoch: doc.epoch as number };
        },
        confirmMs: 0,
      };
    });

    afterEach(async () => {
      emu.clearFaults();
      await sim.stopAll();
      await emu.close();
    });

    leaseScenarios(() => fixture);

    it("two contenders racing to create the lease: one create wins, the other gets 412 and stands by", async () => {
      barrier = new ReadBarrier();
      const a = sim.replica("a");
      const b = sim.replica("b");
      await sim.until(() => sim.leaders().length > 0, "someone leads");
      await sim.run(3 * TTL);
      assert.equal(sim.leaders().length, 1);
      assert.equal(a.events.length + b.events.length, 1);
      const creates = emu.requests.filter((r) => leaseWrite(r) && f.preconditionOf(r) === "create");
      assert.equal(creates.length, 2, "both sent a create-only write");
      const claims = sim.writes.filter((w) => w.record.acquiredAtMs === w.record.renewedAtMs);
      assert.deepEqual(claims.map((w) => w.ok).sort(), [false, true]);
      assert.deepEqual(
        { holder: lease()?.holder, epoch: lease()?.epoch },
        { holder: sim.leaders()[0], epoch: 1 },
      );
    });

    for (const [label, fault] of [
      ["applied-then-500", faults.appliedThen500],
      ["applied-then-reset", faults.appliedThenReset],
    ] as const) {
      it(`a renewal whose acknowledgement is lost (${label}) keeps leadership and adopts the stored version`, async () => {
        const a = sim.replica("a");
        await sim.until(() => a.isLeader, "a leads");
        await sim.run(RENEW / 2);
        const mark = emu.requests.length;
        emu.inject(leaseWrite, fault());
        await sim.run(RENEW);
        // PUT (applied, answer lost) -> PUT (412: it already moved) -> one read-back that finds our bytes.
        assert.deepEqual(timeline(mark), ["W", "W", "R"]);
        assert.ok(warned(/applied-but-unacknowledged lease write/), "the recovery is logged at WARN");
        const adopted = token();
        const next = emu.requests.length;
        await sim.run(RENEW);
        const [renewal] = emu.requests.slice(next).filter(leaseWrite);
        assert.ok(renewal, "a renewed again");
        assert.equal(f.preconditionOf(renewal), adopted, "naming the adopted version");
        await sim.run(2 * TTL);
        assert.deepEqual(a.events, ["+"]);
        assert.equal(a.fenced(), false);
        assert.deepEqual({ holder: lease()?.holder, epoch: lease()?.epoch }, { holder: "a", epoch: 1 });
      });
    }

    it("a claim whose acknowledgement is lost wins with epoch 1, not a second claim", async () => {
      emu.inject(leaseWrite, faults.appliedThen500());
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      const writes = emu.requests.filter(leaseWrite);
      assert.deepEqual(
        writes.map((r) => f.preconditionOf(r)),
        ["create", "create"],
        "the retry re-sent the create-only write and then read back its own bytes",
      );
      assert.equal(a.epoch, 1);
      assert.deepEqual(
        sim.writes.map((w) => [w.record.epoch, w.ok]),
        [[1, true]],
      );
    });

    it("transient errors on a renewal are retried inside the call (503, 429)", async () => {
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      const mark = emu.requests.length;
      emu.inject(leaseWrite, faults.slowDown());
      emu.inject(leaseWrite, faults.tooManyRequests());
      await sim.run(RENEW + 500);
      assert.deepEqual(timeline(mark), ["W", "W", "W"]);
      assert.deepEqual(
        sim.writes.map((w) => w.ok),
        [true, true],
        "one claim, one renewal: no failed call",
      );
      assert.deepEqual(a.events, ["+"]);
    });

    it("a 412 caused by a third party's write makes the leader fence itself, and nobody writes over it for a ttl", async () => {
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      const b = sim.replica("b");
      await sim.run(RENEW / 2);
      emu.inject(
        leaseWrite,
        faults.before(() => void emu.putObject(BUCKET, KEY, intruder(7))),
      );
      const tookAway = await sim.until(() => a.events.length === 2, "a surrenders");
      const intrudedAt = sim.clock.now();
      assert.ok(tookAway <= RENEW, "at its next renewal");
      assert.equal(a.fenced(), true);
      assert.equal(a.coordinator.holder, "intruder");
      assert.ok(!warned(/applied-but-unacknowledged/), "a first-attempt 412 is a conflict, never adopted");
      const writesBefore = sim.writes.length;
      await sim.until(() => sim.leaders().length > 0, "someone takes over the abandoned lease");
      const claim = sim.writes.slice(writesBefore).find((w) => w.ok)!;
      assert.ok(claim.record.renewedAtMs! - intrudedAt >= TTL - RENEW, "only after watching it for a ttl");
      assert.equal(sim.writes.slice(writesBefore).filter((w) => w !== claim && w.ok).length, 0);
      const leader = sim.replicas.find((r) => r.isLeader) as Replica;
      assert.equal(leader.epoch, 8, "above the intruder's epoch");
      assert.deepEqual(b.events.length + a.events.length, 3);
    });

    it("a retried renewal that meets a third party's write (500, then 412) compares bytes and surrenders", async () => {
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      await sim.run(RENEW / 2);
      const mark = emu.requests.length;
      emu.inject(leaseWrite, faults.internalError()); // not applied
      emu.inject(
        leaseWrite,
        faults.before(() => void emu.putObject(BUCKET, KEY, intruder(3))),
      );
      await sim.until(() => a.events.length === 2, "a surrenders");
      // PUT (500) -> PUT (412 on a retry) -> read-back: not our bytes -> the coordinator's own read.
      assert.deepEqual(timeline(mark).slice(0, 4), ["W", "W", "R", "R"]);
      assert.equal(a.coordinator.holder, "intruder");
      assert.equal(a.fenced(), true);
      assert.ok(!warned(/applied-but-unacknowledged/), "someone else's bytes are never adopted");
    });

    it("a leader whose lease object is overwritten with garbage surrenders and re-claims it at once", async () => {
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      emu.putObject(BUCKET, KEY, "{not json");
      await sim.until(() => a.events.length === 3, "a loses and re-claims");
      assert.deepEqual(a.events, ["+", "-", "+"]);
      assert.equal(a.epoch, 2);
      assert.deepEqual({ holder: lease()?.holder, epoch: lease()?.epoch }, { holder: "a", epoch: 2 });
    });

    it("deleting the lease object does not restart the epoch: the sidecar and the leader's memory carry it (#99)", async () => {
      emu.putObject(BUCKET, SIDECAR, "5\n"); // five terms ago; the lease object itself was deleted since
      const c = sim.replica("c"); // a fresh process: it remembers nothing
      await sim.until(() => c.isLeader, "c leads");
      assert.equal(c.epoch, 6, "continued from the epoch sidecar");
      assert.equal(emu.getObject(BUCKET, SIDECAR)?.bytes.toString(), "6\n");
      emu.deleteObject(BUCKET, KEY);
      emu.deleteObject(BUCKET, SIDECAR);
      await sim.until(() => c.events.length === 3, "c loses the deleted lease and re-creates it");
      assert.deepEqual(c.events, ["+", "-", "+"]);
      assert.equal(c.epoch, 7, "continued from memory");
      assert.deepEqual({ holder: lease()?.holder, epoch: lease()?.epoch }, { holder: "c", epoch: 7 });
      assert.equal(emu.getObject(BUCKET, SIDECAR)?.bytes.toString(), "7\n");
    });

    it("a standby that is refused read access never contests the lease, even after the leader dies (#50)", async () => {
      const a = sim.replica("a");
      await sim.until(() => a.isLeader, "a leads");
      emu.inject(leaseRead, f.accessDenied, 1000);
      const b = sim.replica("b");
      a.clock.frozen = true;
      await sim.run(3 * TTL);
      assert.deepEqual(b.events, []);
      assert.equal(sim.writes.filter((w) => w.replica === "b").length, 0, "b never wrote");
      assert.equal(lease()?.holder, "a");
      // What b's WARN says: "cannot tell", never "absent", and which permission to grant.
      const probe = f.backend(emu.url, "probe", { clock: new ManualClock() });
      await assert.rejects(probe.read(new AbortController().signal), (err: Error & { code?: string }) => {
        assert.equal(err.code, "SF2LOKI_LEASE_UNREADABLE");
        assert.match(err.message, f.permission);
        return true;
      });
      await probe.close();
    });
  });
}

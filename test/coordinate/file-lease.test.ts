import assert from "node:assert/strict";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import * as fsp from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterEach, beforeEach, describe, it } from "node:test";
import type { LeaseFs } from "../../src/coordinate/file-lease/atomic-write.ts";
import { FileLeaseBackend } from "../../src/coordinate/file-lease/backend.ts";
import { RENEW, Sim, TTL } from "./harness.ts";
import { leaseScenarios, type LeaseFixture } from "./lease-scenarios.ts";

/** node:fs/promises with switchable storage faults for one replica. */
class FaultyFs {
  failReads = false;
  /** Turn `failReads` on right after the next successful rename (the confirm read then fails). */
  failReadsAfterRename = false;
  failRenames = 0;
  renames = 0;
  readonly fs: LeaseFs = {
    readFile: ((path: string, opts?: object) => {
      if (this.failReads) return Promise.reject(ioError("EIO", path));
      return fsp.readFile(path, opts);
    }) as LeaseFs["readFile"],
    rename: async (from, to) => {
      if (this.failRenames > 0) {
        this.failRenames--;
        throw ioError("EIO", String(to));
      }
      await fsp.rename(from, to);
      this.renames++;
      if (this.failReadsAfterRename) this.failReads = true;
    },
    open: fsp.open,
    mkdir: fsp.mkdir,
    unlink: fsp.unlink,
  };
}

function ioError(code: string, path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`${code}: i/o error, '${path}'`), { code });
}

describe("file_lease coordinator", () => {
  let dir: string;
  let path: string;
  let sim: Sim;
  let faults: Map<string, FaultyFs>;
  let fixture: LeaseFixture;
  const fsOf = (name: string): FaultyFs => {
    let f = faults.get(name);
    if (!f) faults.set(name, (f = new FaultyFs()));
    return f;
  };
  const leaseDoc = (): { holder: string; epoch: number; expires_at: string } =>
    JSON.parse(readFileSync(path, "utf8")) as { holder: string; epoch: number; expires_at: string };

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "sf2loki-lease-"));
    path = join(dir, "shared", "leader.lease");
    faults = new Map();
    sim = new Sim(
      (name) => new FileLeaseBackend({ path, ttlMs: TTL, renewIntervalMs: RENEW, fs: fsOf(name).fs }),
    );
    fixture = {
      sim,
      stored: () => {
        const doc = leaseDoc();
        // A released lease already reads as expired to older (Python) readers of the file.
        if (doc.holder === "") assert.ok(Date.parse(doc.expires_at) <= sim.clock.now());
        return { holder: doc.holder, epoch: doc.epoch };
      },
      confirmMs: 1000,
    };
  });

  afterEach(async () => {
    await sim.stopAll();
    rmSync(dir, { recursive: true, force: true });
  });

  leaseScenarios(() => fixture);

  it("a lost or corrupt lease file does not restart the epoch (#99)", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.stop(a);
    await sim.until(() => b.isLeader, "b leads");
    await sim.stop(b);
    rmSync(path); // an operator "cleans up" the lease file
    const c = sim.replica("c"); // a fresh process: it remembers nothing
    await sim.until(() => c.isLeader, "c leads");
    assert.equal(c.epoch, 3, "the epoch continues from the sidecar, not from 1");
    assert.equal(readFileSync(`${path}.epoch`, "utf8"), "3\n");

    writeFileSync(path, "{not json"); // corrupted while c leads
    await sim.until(() => c.events.length === 3, "c loses and re-acquires");
    assert.deepEqual(c.events, ["+", "-", "+"]);
    assert.equal(c.epoch, 4);
    assert.equal(leaseDoc().epoch, 4);
  });

  it("continues above the checkpoint store's persisted epoch when lease and sidecar are both gone (#99)", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    await sim.stop(a);
    rmSync(path);
    rmSync(`${path}.epoch`);
    const b = sim.replica("b", { epochFloor: () => Promise.resolve(9) });
    await sim.until(() => b.isLeader, "b leads");
    assert.equal(b.epoch, 10);
    const broken = sim.replica("c", { epochFloor: () => Promise.reject(new Error("state unreadable")) });
    await sim.stop(b);
    await sim.until(() => broken.isLeader, "an unreadable floor never blocks the election");
    assert.equal(broken.epoch, 11);
  });

  it("never rewrites the lease while its reads fail, and fences itself before the standby takes over (#96)", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    await sim.run(RENEW + 2000);
    const aFs = fsOf("a");
    aFs.failReadsAfterRename = true; // the next renewal lands, then its confirm read and all later reads fail
    const renamesBefore = aFs.renames;
    let fencedBeforeTakeover = false;
    sim.onStep = () => {
      if (b.isLeader && !fencedBeforeTakeover) fencedBeforeTakeover = a.fenced() && a.events.length === 2;
    };
    await sim.until(() => b.isLeader, "b takes over");
    assert.ok(aFs.failReads, "the fault fired");
    assert.equal(aFs.renames, renamesBefore + 1, "no write after the first failed read");
    assert.ok(fencedBeforeTakeover, "a had fenced itself and called onLose before b led");
    assert.deepEqual(a.events, ["+", "-"]);
    assert.deepEqual(a.losses, [{ why: "lost", termAborted: true }], "term ended before onLose (#17)");
    await sim.run(2 * TTL);
    assert.equal(aFs.renames, renamesBefore + 1);
    assert.equal(leaseDoc().holder, "b");
    assert.equal(leaseDoc().epoch, 2);
  });

  it("rides out a failed renewal inside the ttl without losing leadership", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    const b = sim.replica("b");
    fsOf("a").failRenames = 2;
    await sim.run(3 * TTL);
    assert.equal(fsOf("a").failRenames, 0, "the faults were hit");
    assert.deepEqual(a.events, ["+"]);
    assert.deepEqual(b.events, []);
    assert.equal(a.fenced(), false);
  });

  it("treats a live lease written by the Python sf2loki as live, then takes it over with the next epoch", async () => {
    const expires = new Date(sim.clock.now() + TTL).toISOString().replace("Z", "+00:00");
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, JSON.stringify({ holder: "python-replica", expires_at: expires, epoch: 6 }));
    const a = sim.replica("a");
    const took = await sim.until(() => a.isLeader, "a takes over the abandoned Python lease");
    assert.ok(took >= TTL && took <= TTL + RENEW + 1000 + 100, `took ${took} ms`);
    assert.equal(a.epoch, 7);
  });

  it("never contests a lease it cannot read (#50)", async () => {
    const a = sim.replica("a");
    await sim.until(() => a.isLeader, "a leads");
    fsOf("b").failReads = true;
    const b = sim.replica("b");
    a.clock.frozen = true;
    await sim.run(3 * TTL);
    assert.deepEqual(b.events, []);
    assert.equal(sim.writes.filter((w) => w.replica === "b").length, 0);
    assert.equal(leaseDoc().holder, "a");
    assert.ok(existsSync(path));
  });
});

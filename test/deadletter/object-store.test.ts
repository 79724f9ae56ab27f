// The object dead-letter store through the production SDK clients: S3 and GCS against the in-repo
// emulators, Azure against Azurite. One object per group under `sf2loki/state-deadletter/`, eviction
// of the oldest objects at the bound, rewrites for replay and purge, and a store that keeps failing
// costs one ERROR and a counted failure, never a crash.
import { after, before, describe, test, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { pino } from "pino";
import { AzureFolder } from "../../src/deadletter/folders/azure.ts";
import { GcsFolder } from "../../src/deadletter/folders/gcs.ts";
import { S3Folder } from "../../src/deadletter/folders/s3.ts";
import { DeadLetterKeeper } from "../../src/deadletter/keeper.ts";
import { deadLetterPrefix, type ObjectFolder } from "../../src/deadletter/object-folder.ts";
import { ObjectDeadLetterStore } from "../../src/deadletter/object-store.ts";
import { toRecords } from "../../src/deadletter/record.ts";
import type { DeadLetterBounds, DeadLetterRecord } from "../../src/deadletter/types.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { Azurite } from "../support/azurite.ts";
import { entry } from "../support/fakes.ts";
import { GcsEmulator } from "../support/gcs-emulator.ts";
import { faults } from "../support/object-store-emulator.ts";
import { S3Emulator } from "../support/s3-emulator.ts";
import { TestMetrics } from "../sinks/loki/support.ts";
import { freshContainer, proxyFor } from "../state/helpers/azure-harness.ts";

const BUCKET = "state-bucket";
const PREFIX = deadLetterPrefix("sf2loki/state.json");
const SIGNAL = new AbortController().signal;

interface Backend {
  folder: ObjectFolder;
  /** Object names under the prefix, as the emulator holds them. */
  names(): Promise<string[]>;
}

function group(clock: ManualClock, lines: string[]): DeadLetterRecord[] {
  clock.advance(1);
  return toRecords(
    {
      entries: lines.map((line, i) => entry("apexlog", String(i), { line })),
      reason: "bad_request",
      detail: "line too long",
    },
    clock,
  );
}

function cases(name: string, backend: (t: TestContext) => Promise<Backend>): void {
  test(`${name}: one object per group next to the checkpoint object, read back oldest first, rewritten for replay`, async (t) => {
    const b = await backend(t);
    const clock = new ManualClock();
    const store = new ObjectDeadLetterStore(b.folder, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
    const g1 = group(clock, ["a", "b"]);
    const g2 = group(clock, ["c"]);
    await store.append(g1, SIGNAL);
    await store.append(g2, SIGNAL);
    const names = await b.names();
    assert.equal(names.length, 2);
    assert.ok(
      names.every((n) => /^[0-9a-z]{9}-[0-9a-f]{8}-n[12]\.jsonl$/.test(n)),
      names.join(),
    );
    // A second store (the CLI) sees the same letters.
    const cli = new ObjectDeadLetterStore(b.folder, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
    assert.deepEqual(await cli.list(SIGNAL), [...g1, ...g2]);
    const updated = { ...g1[1]!, detail: "refused again" };
    assert.equal(
      await cli.rewrite(new Set([g1[0]!.id, g2[0]!.id]), new Map([[updated.id, updated]]), SIGNAL),
      2,
    );
    assert.deepEqual(await cli.list(SIGNAL), [updated]);
    assert.equal((await b.names()).length, 1);
    assert.deepEqual(cli.usage()?.entries, 1);
  });

  test(`${name}: at its bound the oldest groups are deleted and counted`, async (t) => {
    const b = await backend(t);
    const clock = new ManualClock();
    const bounds: DeadLetterBounds = { maxBytes: 1 << 20, maxEntries: 3 };
    const store = new ObjectDeadLetterStore(b.folder, bounds, clock);
    const written: DeadLetterRecord[] = [];
    let evicted = 0;
    for (let i = 0; i < 5; i++) {
      const g = group(clock, [`line-${i}`]);
      written.push(...g);
      evicted += (await store.append(g, SIGNAL)).evicted;
    }
    assert.equal(evicted, 2);
    assert.equal((await b.names()).length, 3);
    assert.deepEqual(
      (await store.list(SIGNAL)).map((r) => r.line),
      ["line-2", "line-3", "line-4"],
    );
  });
}

describe("S3", () => {
  const s3 = async (t: TestContext): Promise<Backend & { emulator: S3Emulator }> => {
    const emulator = new S3Emulator({ buckets: [BUCKET] });
    await emulator.start();
    t.after(() => emulator.close());
    const folder = new S3Folder(
      { bucket: BUCKET, key: "sf2loki/state.json", endpoint_url: emulator.url },
      PREFIX,
      {
        credentials: { accessKeyId: "test", secretAccessKey: "test" },
      },
    );
    t.after(() => folder.close());
    return {
      emulator,
      folder,
      names: () =>
        Promise.resolve(listed(emulator, (bucket, key) => bucket === BUCKET && key.startsWith(PREFIX))),
    };
  };
  cases("S3", s3);

  test("S3: a store that keeps failing costs one ERROR with the entry count and a counted failure, not a crash", async (t) => {
    const b = await s3(t);
    const metrics = new TestMetrics();
    const logs: { level: number; msg: string; entries?: number }[] = [];
    const logger = pino(
      { level: "debug" },
      { write: (l: string) => logs.push(JSON.parse(l) as (typeof logs)[number]) },
    );
    const clock = new ManualClock();
    const store = new ObjectDeadLetterStore(b.folder, { maxBytes: 1 << 20, maxEntries: 0 }, clock);
    const keeper = new DeadLetterKeeper({ store, clock, logger, meter: metrics.meter });
    b.emulator.inject((r) => r.method === "PUT", faults.internalError(), 1000);
    await keeper.keep(
      { entries: [entry("apexlog", "1"), entry("apexlog", "2")], reason: "bad_request", detail: "x" },
      SIGNAL,
    );
    assert.equal(await metrics.sum("sf2loki_deadletter_write_failures"), 1);
    assert.equal(await metrics.sum("sf2loki_deadletter_entries"), 0);
    const errors = logs.filter((l) => l.level === 50);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.entries, 2);
    assert.match(
      errors[0]!.msg,
      /could not keep 2 refused entries .* \(4 attempts within 15 s at most\); they are lost/,
    );
    // Then the store recovers: the next group is kept.
    b.emulator.clearFaults();
    await keeper.keep({ entries: [entry("apexlog", "3")], reason: "bad_request", detail: "x" }, SIGNAL);
    assert.equal(await metrics.sum("sf2loki_deadletter_entries", { reason: "bad_request" }), 1);
    assert.equal((await b.names()).length, 1);
  });
});

function listed(emulator: S3Emulator, keep: (bucket: string, key: string) => boolean): string[] {
  const out: string[] = [];
  for (const w of emulator.writes) {
    if (keep(w.bucket, w.key) && emulator.getObject(w.bucket, w.key)) out.push(w.key.slice(PREFIX.length));
  }
  return [...new Set(out)].sort();
}

describe("GCS", () => {
  cases("GCS", async (t) => {
    const emulator = new GcsEmulator({ buckets: [BUCKET] });
    await emulator.start();
    t.after(() => emulator.close());
    const folder = new GcsFolder(
      { bucket: BUCKET, object_name: "sf2loki/state.json", endpoint_url: emulator.url },
      PREFIX,
    );
    t.after(() => folder.close());
    return {
      folder,
      names: () =>
        Promise.resolve(
          [...new Set(emulator.writes.filter((w) => w.name.startsWith(PREFIX)).map((w) => w.name))]
            .filter((n) => emulator.getObject(BUCKET, n))
            .map((n) => n.slice(PREFIX.length))
            .sort(),
        ),
    };
  });
});

describe("Azure", () => {
  let azurite: Azurite | undefined;
  before(async () => {
    azurite = await Azurite.start();
  });
  after(() => azurite?.stop());

  cases("Azure", async (t) => {
    assert.ok(azurite);
    const proxy = await proxyFor(t, azurite);
    const container = freshContainer("deadletter");
    proxy.createContainer(container);
    const folder = new AzureFolder(
      {
        container,
        blob_name: "sf2loki/state.json",
        credential: "connection_string",
        connection_string: proxy.connectionString,
      },
      PREFIX,
    );
    t.after(() => folder.close());
    return {
      folder,
      // What the folder lists is what Azurite holds; the S3 and GCS cases check their listing against the emulator.
      names: async () => (await folder.list(SIGNAL)).map((o) => o.name).sort(),
    };
  });
});

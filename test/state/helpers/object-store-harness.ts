// One harness per backend, so every object-store case runs unchanged against S3 and GCS: the real SDK
// client, a fresh emulator on loopback, and accessors for what landed in the emulator.
import type { TestContext } from "node:test";
import { GcsCheckpointStore } from "../../../src/state/gcs-store.ts";
import type { ObjectStoreOptions } from "../../../src/state/object-store.ts";
import { S3CheckpointStore } from "../../../src/state/s3-store.ts";
import type { CheckpointStore } from "../../../src/state/store.ts";
import { ManualClock } from "../../../src/util/clock.ts";
import { GcsEmulator, gcsRequests } from "../../support/gcs-emulator.ts";
import {
  faults,
  type Fault,
  type InMemoryObjectEmulator,
  type ObjectStoreEmulatorServer,
  type RecordedRequest,
  type RequestMatcher,
} from "../../support/object-store-emulator.ts";
import { S3Emulator, s3Requests } from "../../support/s3-emulator.ts";

export const BUCKET = "state-bucket";
export const OBJECT = "sf2loki/state.json";

export interface ObjectStoreHarness {
  readonly backend: "s3" | "gcs" | "azure";
  readonly emulator: ObjectStoreEmulatorServer;
  readonly location: string;
  readonly clock: ManualClock;
  readonly writes: RequestMatcher;
  readonly reads: RequestMatcher;
  /** A new store over the emulator's object (each one has its own cache and CAS token). */
  store(opts?: ObjectStoreOptions): CheckpointStore;
  /** The object's current bytes, parsed; undefined when absent. */
  stored(): Record<string, string> | undefined;
  storedToken(): string | undefined;
  /** A write by someone else, straight into the emulator. */
  thirdPartyWrite(bytes: string): void;
  /** A fault that lets someone else write `doc` just before the matched request is handled. */
  otherWriterFirst(doc: Record<string, string>): Fault;
  /** A fault that lets someone else delete the object just before the matched request is handled. */
  otherDeleterFirst(): Fault;
  /** The precondition a recorded write carried: "create" or the token it named. */
  preconditionOf(req: RecordedRequest): string | undefined;
}

export type HarnessFactory = (t: TestContext) => Promise<ObjectStoreHarness>;

async function started<E extends ObjectStoreEmulatorServer>(t: TestContext, emulator: E): Promise<E> {
  await emulator.start();
  t.after(() => emulator.close());
  return emulator;
}

function closing(t: TestContext, store: CheckpointStore): CheckpointStore {
  t.after(() => store.close());
  return store;
}

export const s3Harness: HarnessFactory = async (t) => {
  const emulator = await started(t, new S3Emulator({ buckets: [BUCKET] }));
  const clock = new ManualClock();
  const settings = { bucket: BUCKET, key: OBJECT, endpoint_url: emulator.url };
  const clientConfig = { credentials: { accessKeyId: "test", secretAccessKey: "test" } };
  return {
    backend: "s3",
    emulator,
    location: `s3://${BUCKET}/${OBJECT}`,
    clock,
    writes: s3Requests.put(),
    reads: s3Requests.get(),
    store: (opts = {}) => closing(t, new S3CheckpointStore(settings, { clock, ...opts, clientConfig })),
    ...otherParty(emulator),
    storedToken: () => emulator.getObject(BUCKET, OBJECT)?.etag,
    preconditionOf: (req) => (req.headers["if-none-match"] === "*" ? "create" : req.headers["if-match"]),
  };
};

export const gcsHarness: HarnessFactory = async (t) => {
  const emulator = await started(t, new GcsEmulator({ buckets: [BUCKET] }));
  const clock = new ManualClock();
  const settings = { bucket: BUCKET, object_name: OBJECT, endpoint_url: emulator.url };
  return {
    backend: "gcs",
    emulator,
    location: `gs://${BUCKET}/${OBJECT}`,
    clock,
    writes: gcsRequests.upload(),
    reads: gcsRequests.download(),
    store: (opts = {}) => closing(t, new GcsCheckpointStore(settings, { clock, ...opts })),
    ...otherParty(emulator),
    storedToken: () => emulator.getObject(BUCKET, OBJECT)?.generation,
    preconditionOf: (req) => {
      const want = req.query.get("ifGenerationMatch") ?? undefined;
      return want === "0" ? "create" : want;
    },
  };
};

/** What the harness sees and does as "someone else", the same for both emulators. */
function otherParty(emulator: InMemoryObjectEmulator<{ bytes: Buffer }, unknown>) {
  const writeDoc = (doc: Record<string, string>) =>
    void emulator.putObject(BUCKET, OBJECT, JSON.stringify(doc));
  return {
    stored: () => parsed(emulator.getObject(BUCKET, OBJECT)?.bytes),
    thirdPartyWrite: (bytes: string) => void emulator.putObject(BUCKET, OBJECT, bytes),
    otherWriterFirst: (doc: Record<string, string>) =>
      faults.before(() => {
        writeDoc(doc);
      }),
    otherDeleterFirst: () =>
      faults.before(() => {
        emulator.deleteObject(BUCKET, OBJECT);
      }),
  };
}

function parsed(bytes: Buffer | undefined): Record<string, string> | undefined {
  return bytes === undefined ? undefined : (JSON.parse(bytes.toString("utf8")) as Record<string, string>);
}

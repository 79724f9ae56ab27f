import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { LogEntry } from "../../src/model.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { AuthError } from "../../src/salesforce/auth.ts";
import { OrgCheckpointView, OrgSource, ORG_ID_RETRY_MS } from "../../src/sources/org-source.ts";
import { eachEntry, type CheckpointReader, type Source } from "../../src/sources/source.ts";

const real = (key: string, value: string): LogEntry =>
  new LogEntry({
    timestampNs: 1n,
    labels: { source: "pubsub", event_type: "X" },
    line: "{}",
    checkpoint: { key, value },
  });

function stateOf(values: Record<string, string>): CheckpointReader & { reads: string[] } {
  const reads: string[] = [];
  return {
    reads,
    load: (key) => {
      reads.push(key);
      return Promise.resolve(values[key]);
    },
  };
}

/** One step of a scripted run: yield an entry, throw an error, or run a side effect. */
type Step = LogEntry | Error | (() => void);

/** An inner source whose runs (one per events() call) follow a script; records the views it got. */
function scripted(runs: Step[][]): Source & { views: CheckpointReader[] } {
  const views: CheckpointReader[] = [];
  let run = 0;
  return {
    name: "pubsub",
    views,
    async *events(view) {
      views.push(view);
      for (const step of runs[Math.min(run++, runs.length - 1)]!) {
        await Promise.resolve();
        if (step instanceof LogEntry) yield step;
        else if (step instanceof Error) throw step;
        else step();
      }
    },
  };
}

async function drain(
  source: Source,
  state: CheckpointReader,
  signal = new AbortController().signal,
): Promise<LogEntry[]> {
  const out: LogEntry[] = [];
  for await (const e of eachEntry(source.events(state, signal))) out.push(e);
  return out;
}

describe("OrgCheckpointView", () => {
  it("reads prefixed keys, falling back to the legacy key for the first org only", async () => {
    const state = stateOf({ "pubsub:/event/A": "legacy", "org=eu:pubsub:/event/B": "prefixed" });
    const first = new OrgCheckpointView(state, "eu", true);
    const second = new OrgCheckpointView(state, "us", false);
    assert.equal(await first.load("pubsub:/event/A"), "legacy");
    assert.equal(await first.load("pubsub:/event/B"), "prefixed");
    assert.equal(await second.load("pubsub:/event/A"), undefined);
    assert.deepEqual(state.reads, [
      "org=eu:pubsub:/event/A",
      "pubsub:/event/A",
      "org=eu:pubsub:/event/B",
      "org=us:pubsub:/event/A",
    ]);
  });
});

describe("OrgSource", () => {
  it("keeps the inner name, labels real entries, and prefixes every checkpoint key", async () => {
    const inner = scripted([
      [
        real("pubsub:/event/A", "AAA="),
        LogEntry.checkpointOnly({ key: "pubsub:/event/A", value: "AAE=" }, 2n),
      ],
    ]);
    const source = new OrgSource({
      inner,
      org: { name: "eu", environment: "sandbox" },
      orgId: () => Promise.resolve("00Deu"),
      firstOrg: false,
    });

    const [a, b] = await drain(source, stateOf({}));

    assert.equal(source.name, "pubsub");
    assert.deepEqual(a?.labels, {
      source: "pubsub",
      event_type: "X",
      org: "eu",
      environment: "sandbox",
      sf_org_id: "00Deu",
    });
    assert.deepEqual(a.checkpoint, { key: "org=eu:pubsub:/event/A", value: "AAA=" });
    assert.deepEqual(b?.labels, {});
    assert.deepEqual(b.checkpoint, { key: "org=eu:pubsub:/event/A", value: "AAE=" });
    assert.ok(inner.views[0] instanceof OrgCheckpointView);
  });

  it("passes a single (unnamed) org through untouched", async () => {
    const state = stateOf({});
    const inner = scripted([[real("pubsub:/event/A", "AAA=")]]);
    const [a] = await drain(
      new OrgSource({ inner, org: { name: "", environment: "production" }, firstOrg: true }),
      state,
    );
    assert.deepEqual(a?.labels, { source: "pubsub", event_type: "X" });
    assert.equal(a.checkpoint.key, "pubsub:/event/A");
    assert.equal(inner.views[0], state);
  });

  it("omits sf_org_id while resolution fails and retries only after the window", async () => {
    const clock = new ManualClock({ auto: false });
    let calls = 0;
    const orgId = (): Promise<string> =>
      ++calls === 1 ? Promise.reject(new AuthError("no openid")) : Promise.resolve("00Dok");
    const inner = scripted([
      [
        real("k", "1"),
        real("k", "2"),
        () => {
          clock.advance(ORG_ID_RETRY_MS);
        },
        real("k", "3"),
      ],
    ]);
    const out = await drain(
      new OrgSource({ inner, org: { name: "eu", environment: "production" }, orgId, firstOrg: false, clock }),
      stateOf({}),
    );
    assert.deepEqual(
      out.map((e) => e.labels.sf_org_id),
      [undefined, undefined, "00Dok"],
    );
    assert.equal(calls, 2);
  });

  it("restarts the inner source after an AuthError with a doubling backoff, and rethrows anything else", async () => {
    const clock = new ManualClock();
    const inner = scripted([
      [real("k", "1"), new AuthError("token rejected")],
      [new AuthError("token rejected")],
      [real("k", "last")],
    ]);
    const out = await drain(
      new OrgSource({ inner, org: { name: "eu", environment: "production" }, firstOrg: false, clock }),
      stateOf({}),
    );
    assert.deepEqual(
      out.map((e) => e.checkpoint.value),
      ["1", "last"],
    );
    assert.deepEqual(clock.sleeps, [1000, 2000]);

    const failing = scripted([[new Error("boom")]]);
    await assert.rejects(
      drain(
        new OrgSource({
          inner: failing,
          org: { name: "eu", environment: "production" },
          firstOrg: false,
          clock,
        }),
        stateOf({}),
      ),
      /boom/,
    );
  });
});

describe("OrgSource around a real PubSubSource", () => {
  it("resumes the first org from a legacy unprefixed key and emits prefixed, labelled entries", async (t) => {
    const { simOrg, clientCredentials } = await import("../salesforce/support.ts");
    const { TokenProvider } = await import("../../src/salesforce/auth.ts");
    const { PubSubSource } = await import("../../src/sources/pubsub/source.ts");
    const { replayIdFromSequence } = await import("../../src/salesforce/pubsub/proto.ts");
    const sim = await simOrg(t, { eventsPerTopic: 30 });
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    const inner = new PubSubSource({
      settings: {
        enabled: true,
        endpoint: sim.pubsubEndpoint,
        insecure: true,
        default_num_requested: 100,
        replay_preset: "CUSTOM",
        topics: ["/event/LoginEventStream"],
        include: ["*"],
        exclude: [],
        rediscovery_interval: 0,
        sample: {},
        bridge_max_bytes: 0,
      },
      auth,
      org: { name: "eu", environment: "sandbox" },
      clock: new ManualClock(),
      stallTimeoutMs: 0,
    });
    const source = new OrgSource({
      inner,
      org: { name: "eu", environment: "sandbox" },
      orgId: () => auth.orgId(),
      firstOrg: true,
    });
    const state = stateOf({ "pubsub:/event/LoginEventStream": replayIdFromSequence(20).toString("base64") });
    const ac = new AbortController();
    const out: LogEntry[] = [];
    for await (const e of eachEntry(source.events(state, ac.signal))) {
      out.push(e);
      if (out.length === 10) break;
    }
    assert.deepEqual(state.reads, [
      "org=eu:pubsub:/event/LoginEventStream",
      "pubsub:/event/LoginEventStream",
    ]);
    assert.deepEqual(
      out.map((e) => e.checkpoint.value),
      Array.from({ length: 10 }, (_, i) => replayIdFromSequence(21 + i).toString("base64")),
    );
    assert.ok(out.every((e) => e.checkpoint.key === "org=eu:pubsub:/event/LoginEventStream"));
    assert.deepEqual(out[0]!.labels, {
      source: "pubsub",
      event_type: "LoginEventStream",
      org: "eu",
      environment: "sandbox",
      sf_org_id: sim.orgId,
    });
  });
});

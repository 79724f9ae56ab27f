import { describe, it } from "node:test";
import assert from "node:assert/strict";
import type { TestContext } from "node:test";
import { status } from "@grpc/grpc-js";
import type { LogEntry } from "../../src/model.ts";
import { ManualClock, type Clock } from "../../src/util/clock.ts";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import { replayIdFromSequence } from "../../src/salesforce/pubsub/proto.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import {
  PubSubSource,
  type PubSubSettings,
  type PubSubSourceOptions,
} from "../../src/sources/pubsub/source.ts";
import { DescribeGlobalDiscoverer } from "../../src/sources/pubsub/discovery.ts";
import { shouldKeep } from "../../src/sources/shaping/sample.ts";
import { eachEntry, isRun, type CheckpointReader, type SourceItem } from "../../src/sources/source.ts";
import {
  captureLogs,
  clientCredentials,
  metricsHarness,
  simOrg,
  until,
  type MetricsHarness,
} from "../salesforce/support.ts";

const LOGIN = "/event/LoginEventStream";
const API = "/event/ApiEventStream";
const URI = "/event/LightningUriEventStream";

function settings(sim: SimOrg, over: Partial<PubSubSettings> = {}): PubSubSettings {
  return {
    enabled: true,
    endpoint: sim.pubsubEndpoint,
    insecure: true,
    default_num_requested: 100,
    replay_preset: "EARLIEST",
    topics: [LOGIN],
    include: ["*"],
    exclude: [],
    rediscovery_interval: 0,
    sample: {},
    bridge_max_bytes: 128 * 1024 * 1024,
    ...over,
  };
}

interface Harness {
  source: PubSubSource;
  m: MetricsHarness;
  logs: ReturnType<typeof captureLogs>;
}

function sourceFor(
  sim: SimOrg,
  over: Partial<PubSubSettings> = {},
  opts: Partial<PubSubSourceOptions> & { clock?: Clock } = {},
): Harness {
  const m = metricsHarness();
  const logs = captureLogs();
  const source = new PubSubSource({
    settings: settings(sim, over),
    auth: new TokenProvider({ settings: clientCredentials(sim) }),
    org: { name: "", environment: "production" },
    clock: new ManualClock(),
    logger: logs.logger,
    meter: m.meter,
    stallTimeoutMs: 0,
    ...opts,
  });
  return { source, m, logs };
}

function stateOf(values: Record<string, string> = {}): CheckpointReader {
  return { load: (key) => Promise.resolve(values[key]) };
}

/** Pulls entries until `done` says so, then aborts the source and waits for it to return. */
async function collect(
  t: TestContext,
  source: PubSubSource,
  state: CheckpointReader,
  done: (all: LogEntry[]) => boolean,
  onEntry?: (e: LogEntry, all: LogEntry[]) => void,
): Promise<LogEntry[]> {
  const ac = new AbortController();
  t.after(() => {
    ac.abort();
  });
  const all: LogEntry[] = [];
  const timer = setTimeout(() => {
    ac.abort();
  }, 15_000);
  try {
    for await (const e of eachEntry(source.events(state, ac.signal))) {
      all.push(e);
      onEntry?.(e, all);
      if (done(all)) break;
    }
  } finally {
    clearTimeout(timer);
  }
  return all;
}

const seqOf = (e: LogEntry): number => Number(Buffer.from(e.checkpoint.value, "base64").readBigUInt64BE());
const real = (all: LogEntry[]): LogEntry[] => all.filter((e) => !e.checkpointOnly);
const ofTopic = (all: LogEntry[], topic: string): number[] =>
  real(all)
    .filter((e) => e.checkpoint.key === `pubsub:${topic}`)
    .map(seqOf);
const range = (from: number, to: number): number[] =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("PubSubSource entries", () => {
  it("shapes every event: labels, canonical line, metadata with level, event-time timestamp, token", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN, API], eventsPerTopic: 300, seed: 3 });
    const { source } = sourceFor(
      sim,
      { topics: [LOGIN, API] },
      { structuredMetadataFields: ["Username", "Nope"] },
    );

    const all = await collect(t, source, stateOf(), (a) => real(a).length >= 600);

    assert.deepEqual(ofTopic(all, LOGIN), range(1, 300));
    assert.deepEqual(ofTopic(all, API), range(1, 300));
    const first = real(all).find((e) => e.checkpoint.key === `pubsub:${LOGIN}`)!;
    assert.deepEqual(first.labels, { source: "pubsub", event_type: "LoginEventStream" });
    assert.equal(first.checkpoint.value, replayIdFromSequence(1).toString("base64"));
    const payload = JSON.parse(first.line) as Record<string, unknown>;
    assert.equal(payload.EventIdentifier, "sim-LoginEventStream-1");
    assert.deepEqual(Object.keys(payload), Object.keys(payload).sort());
    assert.match(first.line, /^\{"AdditionalInfo": "\{\}", "Application": /);
    // EventDate is timestamp-millis: the line holds Python's str(datetime), the entry its instant.
    assert.equal(
      first.timestampNs,
      BigInt(Date.parse((payload.EventDate as string).replace(" ", "T"))) * 1_000_000n,
    );
    assert.equal(first.structuredMetadata.Username, payload.Username);
    assert.equal("Nope" in first.structuredMetadata, false);
    for (const e of real(all).filter((x) => x.labels.event_type === "LoginEventStream")) {
      const status = (JSON.parse(e.line) as { Status: string }).Status;
      assert.equal(e.structuredMetadata.level, status === "Success" ? "info" : "warn");
    }
  });

  it("resumes after the stored replay id with no gap", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 150 });
    const { source, logs } = sourceFor(sim, { replay_preset: "CUSTOM" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: replayIdFromSequence(100).toString("base64") });

    const all = await collect(t, source, state, (a) => real(a).length >= 50);

    assert.deepEqual(ofTopic(all, LOGIN), range(101, 150));
    assert.ok(
      logs.records.some((r) => r.msg === "subscribing" && r.preset === "CUSTOM" && r.resuming === true),
    );
  });

  it("with the default CUSTOM preset and nothing stored, starts at LATEST", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 40 });
    const { source } = sourceFor(sim, { replay_preset: "CUSTOM" });
    const pending = collect(t, source, stateOf(), (a) => real(a).length >= 5);
    await until(() => (sim.stats().streams[0]?.requested ?? 0) > 0, "the subscription");
    sim.faults.publish(LOGIN, 5);
    assert.deepEqual(ofTopic(await pending, LOGIN), range(41, 45));
  });

  it("a stored checkpoint that is not a replay id resubscribes EARLIEST under CUSTOM: every retained event, 0 skipped", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 100 });
    const { source, m, logs } = sourceFor(
      sim,
      { replay_preset: "CUSTOM" },
      { org: { name: "prod", environment: "production" } },
    );
    const state = stateOf({ [`pubsub:${LOGIN}`]: "not*base64" });

    const all = await collect(t, source, state, (a) => real(a).length >= 100);

    assert.deepEqual(ofTopic(all, LOGIN), range(1, 100));
    const errors = logs.records.filter((r) => r.level === 50);
    assert.equal(errors.length, 1);
    assert.equal(errors[0]!.key, `org=prod:pubsub:${LOGIN}`);
    assert.equal(errors[0]!.preset, "EARLIEST");
    const msg = String(errors[0]!.msg);
    assert.match(msg, /"not\*base64", which is not a replay id/, "says what was found");
    assert.match(msg, /subscribing with EARLIEST/);
    assert.match(
      msg,
      /set org prod's sources\.pubsub\.invalid_checkpoint: latest/,
      "names the key for the gap",
    );
    assert.equal(await m.value("sf2loki_checkpoint_load_errors", { source: "pubsub" }), 1);
  });

  it("the same holds whatever replay_preset says, and for a checkpoint that decodes to nothing", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 30 });
    const { source, logs } = sourceFor(sim, { replay_preset: "LATEST" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: "" });
    const all = await collect(t, source, state, (a) => real(a).length >= 30);
    assert.deepEqual(ofTopic(all, LOGIN), range(1, 30));
    assert.match(logs.messages(50)[0] ?? "", /subscribing with EARLIEST/);
  });

  it("invalid_checkpoint: latest lets an operator prefer the gap, and says so", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 40, keepaliveMs: 20 });
    const { source, logs } = sourceFor(sim, { replay_preset: "CUSTOM", invalid_checkpoint: "latest" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: "garbage!" });
    const all = await collect(t, source, state, (a) => a.length >= 1);
    assert.deepEqual(real(all), [], "nothing retained is replayed");
    assert.equal(seqOf(all[0]!), 40, "the first position is the newest event");
    const msg = logs.messages(50)[0] ?? "";
    assert.match(msg, /subscribing with LATEST: events since the lost position are skipped/);
  });

  it("retries a failing checkpoint load instead of giving up (#45)", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 3 });
    const { source, logs } = sourceFor(sim);
    let calls = 0;
    const state: CheckpointReader = {
      load: () => (++calls < 3 ? Promise.reject(new Error("store unreachable")) : Promise.resolve(undefined)),
    };
    const all = await collect(t, source, state, (a) => real(a).length >= 3);
    assert.deepEqual(ofTopic(all, LOGIN), [1, 2, 3]);
    assert.equal(
      logs.messages(40).filter((msg) => msg === "pubsub checkpoint load failed; retrying").length,
      2,
    );
  });

  it("turns a keepalive into a checkpoint-only entry carrying the latest replay id", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 7, keepaliveMs: 20 });
    const { source } = sourceFor(sim, { replay_preset: "LATEST" });

    const [entry] = await collect(t, source, stateOf(), (a) => a.length >= 1);

    assert.equal(entry?.checkpointOnly, true);
    assert.equal(entry.line, "");
    assert.deepEqual(entry.labels, {});
    assert.deepEqual(entry.checkpoint, {
      key: `pubsub:${LOGIN}`,
      value: replayIdFromSequence(7).toString("base64"),
    });
  });

  it("samples deterministically by replay id; sampled-out events still advance the checkpoint", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 200 });
    const { source, m } = sourceFor(sim, { sample: { "/event/Api*": 1, "/event/Login*": 0.5 } });

    const all = await collect(t, source, stateOf(), (a) => a.length >= 200);

    const kept = range(1, 200).filter((n) => shouldKeep(replayIdFromSequence(n).toString("hex"), 0.5));
    assert.deepEqual(real(all).map(seqOf), kept);
    assert.deepEqual(all.map(seqOf), range(1, 200));
    assert.ok(kept.length > 60 && kept.length < 140);
    assert.equal(
      await m.value("sf2loki_entries_sampled_out", { source: "pubsub", event_type: "LoginEventStream" }),
      200 - kept.length,
    );
  });

  it("drops rows a transform rejects as checkpoint-only entries", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 10 });
    const { source } = sourceFor(
      sim,
      {},
      { transform: (p) => p.EventIdentifier !== "sim-LoginEventStream-4" },
    );
    const all = await collect(t, source, stateOf(), (a) => a.length >= 10);
    assert.deepEqual(real(all).map(seqOf), [1, 2, 3, 5, 6, 7, 8, 9, 10]);
    assert.equal(all[3]!.checkpointOnly, true);
  });
});

describe("PubSubSource recovery", () => {
  it("reconnects after a connection reset from the last id seen: every id exactly once", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 1000 });
    const { source, m } = sourceFor(sim);
    const all = await collect(
      t,
      source,
      stateOf(),
      (a) => a.length >= 1000,
      (_e, a) => {
        if (a.length === 300) sim.faults.resetConnections();
      },
    );
    assert.deepEqual(ofTopic(all, LOGIN), range(1, 1000));
    assert.ok((await m.value("sf2loki_pubsub_reconnects", { topic: LOGIN })) >= 1);
  });

  it("backs off through UNAVAILABLE with growing, jittered delays and resets on the first item", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 200 });
    const clock = new ManualClock({ random: () => 0.5 });
    const { source, m } = sourceFor(sim, { default_num_requested: 50 }, { clock });
    let upWhileRunning: Promise<number> | undefined;
    const all = await collect(
      t,
      source,
      stateOf(),
      (a) => a.length >= 200,
      (_e, a) => {
        if (a.length === 150) upWhileRunning = m.value("sf2loki_pubsub_stream_up", { topic: LOGIN });
        if (a.length === 50) {
          sim.faults.failNextSubscribes(3);
          sim.faults.failStreams({ code: status.UNAVAILABLE, details: "upstream connect error" });
        }
      },
    );
    assert.deepEqual(ofTopic(all, LOGIN), range(1, 200));
    assert.deepEqual(clock.sleeps, [1250, 2500, 5000, 10000]);
    assert.equal(await m.value("sf2loki_pubsub_reconnects", { topic: LOGIN }), 4);
    assert.equal(await upWhileRunning, 1);
    assert.equal(
      await m.value("sf2loki_pubsub_stream_up", { topic: LOGIN }),
      0,
      "a task that exits reports down",
    );
  });

  it("re-mints after the session expires (UNAUTHENTICATED) and carries on", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 400 });
    const { source } = sourceFor(sim);
    const all = await collect(
      t,
      source,
      stateOf(),
      (a) => a.length >= 400,
      (_e, a) => {
        if (a.length === 100) sim.faults.expireTokens();
      },
    );
    assert.deepEqual(ofTopic(all, LOGIN), range(1, 400));
    assert.equal(sim.stats().mints, 2);
  });

  it("re-drains from EARLIEST when Salesforce confirms the stored replay id is corrupted", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 60 });
    sim.faults.rejectNextCustom();
    const { source, m, logs } = sourceFor(sim, { replay_preset: "CUSTOM" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: replayIdFromSequence(50).toString("base64") });

    const all = await collect(t, source, state, (a) => a.length >= 60);

    assert.deepEqual(ofTopic(all, LOGIN), range(1, 60));
    assert.equal(await m.value("sf2loki_pubsub_replay_fallbacks", { topic: LOGIN }), 1);
    assert.ok(logs.messages(50).some((msg) => /resubscribing from EARLIEST/.test(msg)));
  });

  it("with invalid_checkpoint: latest, a rejected replay id resubscribes LATEST instead", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 60, keepaliveMs: 20 });
    sim.faults.rejectNextCustom();
    const { source, m, logs } = sourceFor(sim, { replay_preset: "CUSTOM", invalid_checkpoint: "latest" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: replayIdFromSequence(50).toString("base64") });

    const all = await collect(t, source, state, (a) => a.length >= 1);

    assert.deepEqual(real(all), []);
    assert.equal(seqOf(all[0]!), 60);
    assert.equal(await m.value("sf2loki_pubsub_replay_fallbacks", { topic: LOGIN }), 1);
    assert.ok(
      logs
        .messages(50)
        .some((msg) => /resubscribing from LATEST: events since the lost position are skipped/.test(msg)),
    );
  });

  it("treats a missing trailer like a confirmed corruption (legacy heuristic)", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 30 });
    sim.faults.rejectNextCustom(null);
    const { source, m } = sourceFor(sim, { replay_preset: "CUSTOM" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: replayIdFromSequence(25).toString("base64") });
    const all = await collect(t, source, state, (a) => a.length >= 30);
    assert.deepEqual(ofTopic(all, LOGIN), range(1, 30));
    assert.equal(await m.value("sf2loki_pubsub_replay_fallbacks", { topic: LOGIN }), 1);
  });

  it("keeps its position on an INVALID_ARGUMENT whose trailer names another problem", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 60 });
    sim.faults.rejectNextCustom("sfdc.platform.eventbus.grpc.subscription.some.other.problem");
    const { source, m, logs } = sourceFor(sim, { replay_preset: "CUSTOM" });
    const state = stateOf({ [`pubsub:${LOGIN}`]: replayIdFromSequence(50).toString("base64") });

    const all = await collect(t, source, state, (a) => a.length >= 10);

    assert.deepEqual(ofTopic(all, LOGIN), range(51, 60));
    assert.equal(await m.value("sf2loki_pubsub_replay_fallbacks", { topic: LOGIN }), 0);
    assert.ok(logs.messages(50).some((msg) => /keeping position/.test(msg)));
  });

  it("returns promptly on stop and leaves no stream open", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 0, topics: [LOGIN, API] });
    const { source } = sourceFor(sim, { topics: [LOGIN, API] });
    const ac = new AbortController();
    const run = (async () => {
      for await (const _ of source.events(stateOf(), ac.signal));
    })();
    await until(() => sim.stats().streams.length === 2, "both streams to open");
    ac.abort();
    await run;
    await until(() => sim.stats().streams.every((s) => !s.active), "the streams to close");
  });
});

/** Entries in what one `next()` of a source brought (a run or one entry); 0 past the end. */
const entriesIn = (next: IteratorResult<SourceItem>): number =>
  next.done === true ? 0 : isRun(next.value) ? next.value.length : 1;

describe("PubSubSource backpressure", () => {
  it("stops requesting credit when the consumer stops pulling and the bridge is full", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 5000, maxBatch: 10 });
    const { source } = sourceFor(sim, { default_num_requested: 20 }, { bridgeMaxEntries: 50 });
    const ac = new AbortController();
    t.after(() => {
      ac.abort();
    });
    const it = source.events(stateOf(), ac.signal)[Symbol.asyncIterator]();
    let pulled = 0;
    while (pulled < 10) pulled += entriesIn(await it.next());

    await until(() => sim.stats().streams[0]?.outstanding === 0, "the server to spend its credit");
    await new Promise((r) => setTimeout(r, 50));
    const settled = sim.stats().streams[0]!;
    await new Promise((r) => setTimeout(r, 100));

    assert.deepEqual(sim.stats().streams[0], settled);
    // pulled + bridge 50 + one blocked put + the client's unpulled response + 1.5 n of credit.
    assert.ok(
      settled.requested <= pulled + 50 + 1 + 10 + 30,
      `requested ${settled.requested} (${pulled} pulled)`,
    );
    await it.return();
  });

  it("bounds the bridge by bytes as well as entries", async (t) => {
    const sim = await simOrg(t, { eventsPerTopic: 5000 });
    const { source } = sourceFor(sim, { default_num_requested: 20, bridge_max_bytes: 4096 });
    const ac = new AbortController();
    t.after(() => {
      ac.abort();
    });
    const it = source.events(stateOf(), ac.signal)[Symbol.asyncIterator]();
    await it.next();
    await until(() => sim.stats().streams[0]?.outstanding === 0, "the server to spend its credit");
    await new Promise((r) => setTimeout(r, 50));
    const settled = sim.stats().streams[0]!;
    // ~700-byte lines: about 5 entries fill 4 KiB, far below the 1000-entry bound.
    assert.ok(settled.requested <= 1 + 8 + 20 + 30, `requested ${settled.requested}`);
    await it.return();
  });
});

describe("PubSubSource wildcard", () => {
  const TOPICS = [
    LOGIN,
    API,
    URI,
    "/event/ApiAnomalyEvent",
    "/event/Order_Shipped__e",
    "/data/AccountChangeEvent",
  ];

  it("discovers exactly the Python version's *EventStream set by default", async (t) => {
    const sim = await simOrg(t, { topics: TOPICS, eventsPerTopic: 2 });
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    const found = await new DescribeGlobalDiscoverer(auth, "60.0").discover();
    assert.deepEqual(found, [API, URI, LOGIN]);
    const wider = await new DescribeGlobalDiscoverer(auth, "60.0", undefined, {
      storePairs: true,
    }).discover();
    assert.deepEqual(wider, ["/event/ApiAnomalyEvent", API, URI, LOGIN]);
  });

  it("with discover_event_store_pairs, adds Event/EventStore pairs, filtered by include/exclude and owned categories", async (t) => {
    const sim = await simOrg(t, { topics: TOPICS, eventsPerTopic: 2 });
    const { source, logs } = sourceFor(
      sim,
      { topics: ["*"], include: ["/event/*"], exclude: ["*Lightning*"], discover_event_store_pairs: true },
      { ownedCategories: new Set(["login"]) },
    );

    const all = await collect(t, source, stateOf(), (a) => a.length >= 4);

    const topics = new Set(all.map((e) => e.checkpoint.key));
    assert.deepEqual([...topics].sort(), ["pubsub:/event/ApiAnomalyEvent", "pubsub:/event/ApiEventStream"]);
    assert.ok(
      logs.records.some(
        (r) =>
          r.msg === "discovered topic skipped: its category is owned by another source" &&
          r.category === "login",
      ),
    );
    assert.deepEqual(
      new Set(sim.stats().streams.map((s) => s.topic)),
      new Set(["/event/ApiAnomalyEvent", API]),
    );
  });

  it("discovers the newer Threat Detection events through their *Store twins and streams them (#38)", async (t) => {
    const threat = ["/event/LoginAnomalyEvent", "/event/UniversalAnomalyEvent"];
    const sim = await simOrg(t, { topics: [LOGIN, ...threat], eventsPerTopic: 3 });
    const auth = new TokenProvider({ settings: clientCredentials(sim) });
    // Off by default: a swap to the wildcard adds no topic on its own.
    assert.deepEqual(await new DescribeGlobalDiscoverer(auth, "66.0").discover(), [LOGIN]);
    const { source } = sourceFor(sim, { topics: ["*"], discover_event_store_pairs: true });

    const all = await collect(t, source, stateOf(), (a) => a.length >= 9);

    const byTopic = new Map<string, LogEntry[]>();
    for (const e of all) byTopic.set(e.checkpoint.key, [...(byTopic.get(e.checkpoint.key) ?? []), e]);
    assert.deepEqual([...byTopic.keys()].sort(), [LOGIN, ...threat].map((t) => `pubsub:${t}`).sort());
    for (const topic of threat) {
      const entries = byTopic.get(`pubsub:${topic}`)!;
      assert.equal(entries.length, 3, topic);
      for (const e of entries) {
        assert.equal(e.labels.event_type, topic.slice("/event/".length));
        const p = JSON.parse(e.line) as Record<string, unknown>;
        assert.equal(typeof p.Score, "number", `${topic}: Score is shipped as a number`);
        assert.equal(
          e.timestampNs,
          BigInt(Date.parse(p.EventDate as string)) * 1_000_000n,
          `${topic}: dated at EventDate`,
        );
      }
    }
    const subtypes = byTopic
      .get("pubsub:/event/UniversalAnomalyEvent")!
      .map((e) => (JSON.parse(e.line) as { AnomalySubType: string }).AnomalySubType);
    assert.deepEqual(subtypes, ["ApiAnomaly", "CredentialStuffing", "GuestUserAnomaly"]);
  });

  it("falls back to the explicit topics when discovery keeps failing", async (t) => {
    const sim = await simOrg(t, { topics: TOPICS, eventsPerTopic: 2 });
    sim.faults.failHttp("/services/data/v60.0/sobjects/", 3, 500);
    const { source, logs } = sourceFor(sim, { topics: ["*", URI] });
    const all = await collect(t, source, stateOf(), (a) => a.length >= 2);
    assert.deepEqual(ofTopic(all, URI), [1, 2]);
    assert.equal(sim.stats().describeCalls, 3);
    assert.ok(logs.messages(50).some((msg) => /wildcard topics dropped for this pass/.test(msg)));
  });

  it("rediscovers periodically and subscribes to topics that appear later", async (t) => {
    const sim = await simOrg(t, { topics: [API], eventsPerTopic: 1 });
    const clock = new ManualClock({ auto: false });
    const { source } = sourceFor(sim, { topics: ["*"], rediscovery_interval: 60_000 }, { clock });

    const all = await collect(
      t,
      source,
      stateOf(),
      (a) => a.some((e) => e.checkpoint.key === "pubsub:/event/ReportEventStream"),
      (e) => {
        if (e.checkpoint.key === `pubsub:${API}`) {
          sim.faults.addTopic("/event/ReportEventStream", 1);
          clock.advance(66_000);
        }
      },
    );

    assert.deepEqual(ofTopic(all, "/event/ReportEventStream"), [1]);
    assert.equal(sim.stats().describeCalls, 2);
  });
});

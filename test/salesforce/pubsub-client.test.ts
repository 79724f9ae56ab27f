import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import { ManualClock } from "../../src/util/clock.ts";
import { PubSubClient, type SubscribeItem } from "../../src/salesforce/pubsub/client.ts";
import {
  SchemaFetchError,
  StreamStalledError,
  grpcCode,
  replayRejection,
} from "../../src/salesforce/pubsub/errors.ts";
import { replayIdFromSequence } from "../../src/salesforce/pubsub/proto.ts";
import { clientFor, metricsHarness, simOrg, until } from "./support.ts";

const LOGIN = "/event/LoginEventStream";
const API = "/event/ApiEventStream";
const URI = "/event/LightningUriEventStream";

function seqOf(id: Buffer): number {
  return Number(id.readBigUInt64BE());
}

/** Pulls `count` items, then stops iterating (which cancels the call). */
async function take(it: AsyncIterable<SubscribeItem>, count: number): Promise<SubscribeItem[]> {
  const out: SubscribeItem[] = [];
  if (count <= 0) return out;
  for await (const item of it) {
    out.push(item);
    if (out.length >= count) break;
  }
  return out;
}

/** The error a subscription ends with (it may be partly consumed already); fails if it ends cleanly. */
async function failureOf(items: AsyncIterable<SubscribeItem>): Promise<unknown> {
  try {
    for await (const _ of items);
  } catch (err) {
    return err;
  }
  return assert.fail("expected the subscription to fail");
}

function resumeAfter(client: PubSubClient, replayId: Buffer): AsyncGenerator<SubscribeItem, void, undefined> {
  return client.subscribe(
    { topic: LOGIN, preset: "CUSTOM", replayId, numRequested: 10 },
    new AbortController().signal,
  );
}

describe("PubSubClient subscribe", () => {
  it("delivers 3 topics × 2000 events: every id exactly once, in order, up to the last replay id", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN, API, URI], eventsPerTopic: 2000, seed: 7 });
    const { client } = clientFor(t, sim);
    const ac = new AbortController();

    const results = await Promise.all(
      [LOGIN, API, URI].map((topic) =>
        take(client.subscribe({ topic, preset: "EARLIEST", numRequested: 100 }, ac.signal), 2000),
      ),
    );

    for (const [i, topic] of [LOGIN, API, URI].entries()) {
      const items = results[i]!;
      const short = topic.slice(topic.lastIndexOf("/") + 1);
      assert.deepEqual(
        items.map((x) => (x.kind === "event" ? x.payload.EventIdentifier : "keepalive")),
        Array.from({ length: 2000 }, (_, n) => `sim-${short}-${n + 1}`),
      );
      assert.deepEqual(
        items.map((x) => seqOf(x.replayId)),
        Array.from({ length: 2000 }, (_, n) => n + 1),
      );
      assert.equal(sim.stats().topics[topic]!.maxReplayId, 2000);
    }
  });

  it("requests more credit only as the consumer pulls; a stopped consumer gets nothing more", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 5000, maxBatch: 30 });
    const { client } = clientFor(t, sim);
    const it = client.subscribe(
      { topic: LOGIN, preset: "EARLIEST", numRequested: 100 },
      new AbortController().signal,
    );
    const iterator = it[Symbol.asyncIterator]();
    for (let i = 0; i < 250; i++) await iterator.next();

    await until(() => sim.stats().streams[0]?.outstanding === 0, "the server to spend its credit");
    const settled = sim.stats().streams[0]!;
    await new Promise((r) => setTimeout(r, 100));
    const later = sim.stats().streams[0]!;

    assert.deepEqual(later, settled, "no credit requested while the consumer is not pulling");
    assert.ok(settled.sent <= settled.requested);
    assert.ok(settled.requested - 250 <= 150, `requested ${settled.requested} for 250 pulled`);
    assert.equal(sim.stats().topics[LOGIN]!.emitted, settled.sent);
    await iterator.return();
  });

  it("yields a keepalive with the latest replay id when the topic goes quiet", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 10, keepaliveMs: 20 });
    const { client } = clientFor(t, sim);
    const items = await take(
      client.subscribe({ topic: LOGIN, preset: "EARLIEST", numRequested: 100 }, new AbortController().signal),
      11,
    );
    assert.equal(items[10]!.kind, "keepalive");
    assert.equal(seqOf(items[10]!.replayId), 10);
  });

  it("resumes after a CUSTOM replay id with no gap", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 50 });
    const { client } = clientFor(t, sim);
    const items = await take(
      client.subscribe(
        { topic: LOGIN, preset: "CUSTOM", replayId: replayIdFromSequence(20), numRequested: 10 },
        new AbortController().signal,
      ),
      30,
    );
    assert.deepEqual(
      items.map((x) => seqOf(x.replayId)),
      Array.from({ length: 30 }, (_, n) => n + 21),
    );
  });

  it("surfaces a corrupted replay id as INVALID_ARGUMENT with the confirming trailer", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 5 });
    const { client } = clientFor(t, sim);
    const err = await failureOf(resumeAfter(client, Buffer.from("junk")));
    assert.equal(grpcCode(err), status.INVALID_ARGUMENT);
    assert.equal(replayRejection(err), "confirmed");

    sim.faults.rejectNextCustom(null);
    assert.equal(
      replayRejection(await failureOf(resumeAfter(client, replayIdFromSequence(1)))),
      "no-trailer",
    );

    sim.faults.rejectNextCustom("sfdc.platform.eventbus.grpc.some.other.problem");
    const other = await failureOf(resumeAfter(client, replayIdFromSequence(1)));
    assert.equal(replayRejection(other), "other");
  });

  it("invalidates exactly the token it used when the stream dies UNAUTHENTICATED", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 5 });
    const { client, auth } = clientFor(t, sim);
    const it = client.subscribe(
      { topic: LOGIN, preset: "EARLIEST", numRequested: 10 },
      new AbortController().signal,
    );
    await it.next();
    assert.equal(auth.hasToken(), true);
    sim.faults.expireTokens();
    const err = await failureOf(it);
    assert.equal(grpcCode(err), status.UNAUTHENTICATED);
    assert.equal(auth.hasToken(), false);
  });

  it("fails with UNAVAILABLE on a connection reset", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 5 });
    const { client } = clientFor(t, sim);
    const it = client.subscribe(
      { topic: LOGIN, preset: "EARLIEST", numRequested: 10 },
      new AbortController().signal,
    );
    await it.next();
    assert.equal(sim.faults.resetConnections(), 1);
    const err = await failureOf(it);
    assert.equal(grpcCode(err), status.UNAVAILABLE);
  });

  it("ends cleanly when the server ends the stream", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 3 });
    const { client } = clientFor(t, sim);
    const seen: number[] = [];
    for await (const item of client.subscribe(
      { topic: LOGIN, preset: "EARLIEST", numRequested: 10 },
      new AbortController().signal,
    )) {
      seen.push(seqOf(item.replayId));
      if (seen.length === 3) sim.faults.endStreams();
    }
    assert.deepEqual(seen, [1, 2, 3]);
  });

  it("returns promptly when the signal aborts while waiting", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 0 });
    const { client } = clientFor(t, sim);
    const ac = new AbortController();
    const done = take(client.subscribe({ topic: LOGIN, preset: "LATEST", numRequested: 10 }, ac.signal), 1);
    await until(() => sim.stats().streams.length === 1, "the stream to open");
    ac.abort();
    assert.deepEqual(await done, []);
  });

  it("raises StreamStalled after 300 s without any response and counts it", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 2 });
    const clock = new ManualClock({ auto: false });
    const m = metricsHarness();
    const { client } = clientFor(t, sim, { clock, meter: m.meter, stallTimeoutMs: 300_000 });
    const it = client.subscribe(
      { topic: LOGIN, preset: "EARLIEST", numRequested: 10 },
      new AbortController().signal,
    );
    await it.next();
    await it.next();
    sim.faults.stallStreams();
    const pending = it.next();
    clock.advance(299_999);
    clock.advance(1);
    await assert.rejects(pending, StreamStalledError);
    assert.equal(await m.value("sf2loki_pubsub_stream_stalls", { topic: LOGIN }), 1);
  });
});

describe("PubSubClient decoding", () => {
  it("decodes Avro with unwrapped unions, plain longs and Python's timestamp-millis text, CDC bitmaps untouched", async (t) => {
    const sim = await simOrg(t, { topics: ["/data/AccountChangeEvent"], eventsPerTopic: 1 });
    const { client } = clientFor(t, sim);
    const [item] = await take(
      client.subscribe(
        { topic: "/data/AccountChangeEvent", preset: "EARLIEST", numRequested: 1 },
        new AbortController().signal,
      ),
      1,
    );
    assert.ok(item?.kind === "event");
    const p = item.payload;
    const header = p.ChangeEventHeader as Record<string, unknown>;
    assert.deepEqual(header.changedFields, ["0x1A", "3-0x01"]);
    assert.equal(typeof header.commitTimestamp, "number");
    // fastavro turns timestamp-millis into a datetime and the Python line holds its str().
    assert.match(String(p.LastModifiedDate), /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{6})?\+00:00$/);
    assert.equal(p.EventIdentifier, "sim-AccountChangeEvent-1");
  });

  it("skips a poison event, counts decode_errors{reason,topic}, and keeps going", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 5 });
    sim.faults.poisonEvents(LOGIN, [3]);
    const m = metricsHarness();
    const { client } = clientFor(t, sim, { meter: m.meter });
    const items = await take(
      client.subscribe({ topic: LOGIN, preset: "EARLIEST", numRequested: 10 }, new AbortController().signal),
      4,
    );
    assert.deepEqual(
      items.map((x) => seqOf(x.replayId)),
      [1, 2, 4, 5],
    );
    assert.equal(await m.value("sf2loki_decode_errors", { topic: LOGIN }), 1);
    assert.equal(await m.value("sf2loki_pubsub_decode_stalls"), 0);
  });

  it("surfaces a topic whose batches all fail three times in a row, once", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 10, maxBatch: 2 });
    sim.faults.poisonEvents(LOGIN, [1, 2, 3, 4, 5, 6, 7, 8]);
    const m = metricsHarness();
    const { client } = clientFor(t, sim, { meter: m.meter });
    const items = await take(
      client.subscribe({ topic: LOGIN, preset: "EARLIEST", numRequested: 2 }, new AbortController().signal),
      2,
    );
    assert.deepEqual(
      items.map((x) => seqOf(x.replayId)),
      [9, 10],
    );
    assert.equal(await m.value("sf2loki_decode_errors", { topic: LOGIN }), 8);
    assert.equal(await m.value("sf2loki_pubsub_decode_stalls", { topic: LOGIN }), 1);
  });

  it("treats a schema fetch failure as a stream error, not poison, and fetches each schema once", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 3 });
    sim.faults.failNextSchemas(1);
    const { client } = clientFor(t, sim);
    await assert.rejects(
      take(
        client.subscribe(
          { topic: LOGIN, preset: "EARLIEST", numRequested: 10 },
          new AbortController().signal,
        ),
        3,
      ),
      SchemaFetchError,
    );
    const items = await take(
      client.subscribe({ topic: LOGIN, preset: "EARLIEST", numRequested: 10 }, new AbortController().signal),
      3,
    );
    assert.deepEqual(
      items.map((x) => seqOf(x.replayId)),
      [1, 2, 3],
    );
    await take(
      client.subscribe({ topic: LOGIN, preset: "EARLIEST", numRequested: 10 }, new AbortController().signal),
      3,
    );
    assert.equal(sim.stats().schemaCalls, 2);
  });

  it("reports TopicInfo from GetTopic", async (t) => {
    const sim = await simOrg(t, { topics: [LOGIN], eventsPerTopic: 0 });
    const { client } = clientFor(t, sim);
    const info = await client.getTopic(LOGIN);
    assert.equal(info.can_subscribe, true);
    assert.equal(info.tenant_guid, sim.orgId);
    assert.ok(info.schema_id.length > 0);
  });
});

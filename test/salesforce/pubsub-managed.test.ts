// ManagedSubscribe (#36) between the real client and the simulated org: where a managed subscription
// starts (its committed replay, else defaultReplay; errorRecoveryReplay past the retention), commits
// in-stream and their answers, one subscriber at a time, and the Tooling API record doctor reads.
import { describe, it, type TestContext } from "node:test";
import assert from "node:assert/strict";
import { status } from "@grpc/grpc-js";
import { TokenProvider } from "../../src/salesforce/auth.ts";
import { PubSubClient, type ManagedItem, type ManagedStream } from "../../src/salesforce/pubsub/client.ts";
import { grpcCode } from "../../src/salesforce/pubsub/errors.ts";
import { lookupManagedSubscription } from "../../src/salesforce/pubsub/managed-lookup.ts";
import { replayIdFromSequence } from "../../src/salesforce/pubsub/proto.ts";
import type { SimOrg } from "../../src/sim/salesforce/index.ts";
import { clientCredentials, simOrg } from "./support.ts";

const LOGIN = "/event/LoginEventStream";
const SUB = "SF2Loki_Login";

function clientFor(t: TestContext, sim: SimOrg): { client: PubSubClient; auth: TokenProvider } {
  const auth = new TokenProvider({ settings: clientCredentials(sim) });
  const client = new PubSubClient({ endpoint: sim.pubsubEndpoint, auth, insecure: true, stallTimeoutMs: 0 });
  t.after(() => {
    client.close();
  });
  return { client, auth };
}

function open(client: PubSubClient, t: TestContext, ref = { developerName: SUB }): ManagedStream {
  const stop = new AbortController();
  t.after(() => {
    stop.abort();
  });
  return client.managedSubscribe({ subscription: ref, topic: LOGIN, numRequested: 10 }, stop.signal);
}

/** Pulls items until `want` holds for the collected ones; stops iterating (which cancels the call). */
async function until(stream: ManagedStream, want: (items: ManagedItem[]) => boolean): Promise<ManagedItem[]> {
  const out: ManagedItem[] = [];
  for await (const item of stream) {
    out.push(item);
    if (want(out)) break;
  }
  return out;
}

const events = (items: ManagedItem[]) => items.filter((i) => i.kind === "event");
const seqs = (items: ManagedItem[]) => events(items).map((i) => Number(i.replayId.readBigUInt64BE()));

async function failureOf(stream: ManagedStream): Promise<unknown> {
  try {
    for await (const _ of stream);
  } catch (err) {
    return err;
  }
  return assert.fail("expected the managed subscription to fail");
}

describe("ManagedSubscribe against the simulated org", () => {
  it("starts at defaultReplay, resumes after the committed replay, and answers each commit", async (t) => {
    const sim = await simOrg(t, {
      eventsPerTopic: 30,
      managedSubscriptions: [{ developerName: SUB, topic: LOGIN, defaultReplay: "EARLIEST" }],
    });
    const { client } = clientFor(t, sim);
    const first = open(client, t);
    let committedAt = -1;
    const items = await until(first, (got) => {
      if (committedAt < 0 && events(got).length >= 12) {
        committedAt = Number(events(got)[11]!.replayId.readBigUInt64BE());
        first.commit(replayIdFromSequence(committedAt));
      }
      return got.some((i) => i.kind === "commit");
    });
    assert.deepEqual(
      seqs(items).slice(0, 12),
      [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12],
      "EARLIEST: from the first",
    );
    const answer = items.find((i) => i.kind === "commit")!;
    assert.equal(answer.error, undefined);
    assert.equal(sim.stats().managed[0]!.committed, 12);
    // The next stream (the first one is closed: one subscriber at a time) starts after the commit.
    const second = await until(open(client, t), (got) => events(got).length >= 3);
    assert.deepEqual(seqs(second), [13, 14, 15]);
    assert.equal(sim.stats().managedSubscribeCalls, 2);
  });

  it("refuses a commit of a replay id the stream never delivered, and an injected refusal, with an Error of code COMMIT", async (t) => {
    const sim = await simOrg(t, {
      eventsPerTopic: 5,
      managedSubscriptions: [{ developerName: SUB, topic: LOGIN, defaultReplay: "EARLIEST" }],
    });
    sim.faults.refuseNextCommits(SUB, 1, "try again later");
    const { client } = clientFor(t, sim);
    const stream = open(client, t);
    let asked = 0;
    const items = await until(stream, (got) => {
      if (asked === 0 && events(got).length >= 5) {
        asked++;
        stream.commit(replayIdFromSequence(2));
        stream.commit(replayIdFromSequence(99));
      }
      return got.filter((i) => i.kind === "commit").length >= 2;
    });
    const answers = items.filter((i) => i.kind === "commit");
    assert.deepEqual(
      answers.map((a) => a.error),
      [
        "COMMIT: try again later",
        `COMMIT: replay id ${replayIdFromSequence(99).toString("hex")} was not delivered on this subscription`,
      ],
    );
    assert.equal(sim.stats().managed[0]!.committed, undefined, "nothing stored");
  });

  it("serves one subscriber at a time, refuses a stopped or unknown subscription, and restarts a STOP at defaultReplay", async (t) => {
    const sim = await simOrg(t, {
      eventsPerTopic: 5,
      managedSubscriptions: [{ developerName: SUB, topic: LOGIN, defaultReplay: "LATEST" }],
    });
    const { client } = clientFor(t, sim);
    const holder = open(client, t);
    const it = holder[Symbol.asyncIterator]();
    const pending = it.next();
    while (!sim.stats().managed[0]!.subscribed) await new Promise((r) => setTimeout(r, 10));
    const busy = await failureOf(open(client, t));
    assert.equal(grpcCode(busy), status.FAILED_PRECONDITION);
    assert.match(String(busy), /already has an active subscriber/);
    sim.faults.setManagedSubscriptionState(SUB, "STOP");
    await assert.rejects(pending, (err) => grpcCode(err) === status.FAILED_PRECONDITION);
    const stopped = await failureOf(open(client, t));
    assert.match(String(stopped), /is in state STOP/);
    const missing = await failureOf(open(client, t, { developerName: "Nope" }));
    assert.equal(grpcCode(missing), status.NOT_FOUND);
    // LATEST after RUN again: only what is published from now on.
    sim.faults.setManagedSubscriptionState(SUB, "RUN");
    const fresh = open(client, t);
    const got = until(fresh, (items) => events(items).length >= 2);
    while (!sim.stats().managed[0]!.subscribed) await new Promise((r) => setTimeout(r, 10));
    sim.faults.publish(LOGIN, 2);
    assert.deepEqual(seqs(await got), [6, 7]);
  });

  it("past the retention, a committed replay restarts at errorRecoveryReplay", async (t) => {
    const sim = await simOrg(t, {
      eventsPerTopic: 10,
      retentionEvents: 10,
      managedSubscriptions: [
        { developerName: SUB, topic: LOGIN, defaultReplay: "EARLIEST", errorRecoveryReplay: "EARLIEST" },
      ],
    });
    const { client } = clientFor(t, sim);
    const stream = open(client, t);
    let sent = false;
    await until(stream, (got) => {
      if (!sent && events(got).length >= 3) {
        sent = true;
        stream.commit(replayIdFromSequence(3));
      }
      return got.some((i) => i.kind === "commit");
    });
    sim.faults.publish(LOGIN, 20); // events 1..20 fall out of the 10-event window
    const again = await until(open(client, t), (got) => events(got).length >= 1);
    assert.deepEqual(seqs(again), [21], "from the earliest retained event, not after 3");
  });

  it("the Tooling API lists the record: its id, topic, state and replay presets", async (t) => {
    const sim = await simOrg(t, {
      managedSubscriptions: [{ developerName: SUB, topic: LOGIN, defaultReplay: "EARLIEST" }],
    });
    const { auth } = clientFor(t, sim);
    const found = await lookupManagedSubscription(auth, "60.0", { developerName: SUB });
    assert.deepEqual(found, {
      id: sim.stats().managed[0]!.id,
      developerName: SUB,
      topic: LOGIN,
      state: "RUN",
      defaultReplay: "EARLIEST",
      errorRecoveryReplay: "LATEST",
    });
    assert.deepEqual(await lookupManagedSubscription(auth, "60.0", { id: found.id }), found);
    assert.equal(await lookupManagedSubscription(auth, "60.0", { developerName: "Nope" }), undefined);
  });
});

// One topic's subscription loop (§4.2): load the position inside the retry loop, subscribe, shape,
// enqueue (blocking when the bridge is full), reconnect from the last id seen, classify failures.
// A managed subscription (managed.ts) streams through ManagedSubscribe instead: Salesforce keeps the
// position, and this task commits it there as the run commits its checkpoint.
import { status } from "@grpc/grpc-js";
import type { Counter, Gauge } from "@opentelemetry/api";
import { LogEntry, msToNs } from "../../model.ts";
import type { Clock } from "../../util/clock.ts";
import type { Logger } from "../../obs/logger.ts";
import type {
  CommitAnswer,
  DecodedEvent,
  ManagedItem,
  ManagedStream,
  PubSubSubscriber,
} from "../../salesforce/pubsub/client.ts";
import type { ManagedSubscriptionInfo } from "../../salesforce/pubsub/managed-lookup.ts";
import { describeGrpcError, grpcCode, replayRejection } from "../../salesforce/pubsub/errors.ts";
import type { ReplayPresetName } from "../../salesforce/pubsub/proto.ts";
import type { CheckpointReader } from "../source.ts";
import type { Bridge } from "./bridge.ts";
import { checkpointKey, decodeReplayId, encodeReplayId } from "./replay.ts";
import { sampleRateFor } from "./sample.ts";
import type {
  ManagedSubscriptionSetting,
  OrgIdentity,
  PayloadTransform,
  PubSubSettings,
} from "./settings.ts";
import { OncePer } from "../../util/once-per.ts";
import {
  MANAGED_REPEAT_MS,
  Unacknowledged,
  commitRefusedLine,
  nameOf,
  refOf,
  refusalLine,
  refusalOf,
  topicMismatchLine,
  type ManagedRef,
  type ManagedRefusal,
} from "./managed.ts";
import { eventTimestampNs } from "./shape.ts";
import { canonicalJson } from "../shaping/json.ts";
import { abortable } from "../../util/abortable.ts";
import { routeFields } from "../shaping/metadata.ts";
import { shouldKeep } from "../shaping/sample.ts";
import { pickTimestamp } from "../shaping/timestamp.ts";
import { eventTypeOf } from "./topics.ts";
import { RECONNECT_BASE_MS, RECONNECT_CAP_MS, jittered, stopped } from "./backoff.ts";

export { RECONNECT_BASE_MS, RECONNECT_CAP_MS, jittered, stopped } from "./backoff.ts";

export interface SourceInstruments {
  streamUp: Gauge;
  reconnects: Counter;
  replayFallbacks: Counter;
  checkpointLoadErrors: Counter;
  timestampFallbacks: Counter;
  sampledOut: Counter;
  /** Managed subscriptions: commits by outcome (sent, committed, refused). */
  managedCommits: Counter;
  /** Managed subscriptions: subscribes Salesforce refused, by reason. */
  managedRefusals: Counter;
}

export interface TopicTaskContext {
  state: CheckpointReader;
  bridge: Bridge;
  client: PubSubSubscriber;
  settings: PubSubSettings;
  org: OrgIdentity;
  clock: Clock;
  log: Logger;
  m: SourceInstruments;
  metadataFields: readonly string[];
  transform: PayloadTransform | undefined;
  signal: AbortSignal;
  /** Reads a managed subscription's record (Tooling API) before it is streamed; absent: unchecked. */
  describeManaged?: (ref: ManagedRef, signal: AbortSignal) => Promise<ManagedSubscriptionInfo | undefined>;
}

/** A refused commit is sent again after a backoff up to this long. */
const MAX_COMMIT_BACKOFF_MS = 60_000;
/** A stopped run's managed stream stays open this long at most, for the drain's commits. */
export const LINGER_MS = 60_000;
/** After the drain, how long the last commit's answer is waited for. */
export const FINISH_MS = 5_000;

export class TopicTask {
  readonly #c: TopicTaskContext;
  readonly #topic: string;
  readonly #key: string;
  readonly #eventType: string;
  readonly #rate: number;
  readonly #attrs: { topic: string; subscription?: string };
  #preset: ReplayPresetName = "LATEST";
  #replayId: Buffer | undefined;
  #lastGoodNs: bigint | undefined;
  /** Set for a managed subscription; undefined: a plain Subscribe of the topic. */
  readonly #managed: ManagedSubscriptionSetting | undefined;
  /** The open managed stream, for commits. */
  #stream: ManagedStream | undefined;
  /** The newest value the run committed for this key, and the newest sent to Salesforce. */
  #committed: string | undefined;
  #sent: string | undefined;
  readonly #unacked = new Unacknowledged();
  #unwatch: (() => void) | undefined;
  /** The managed stream kept open after the stop, for the drain's commits. */
  #lingering: { close(): void; closed: Promise<void>; signal: AbortSignal } | undefined;
  #finishing = false;
  /** The newest value Salesforce acknowledged as committed. */
  #acked: string | undefined;
  /** Which managed stream is open: its commits may name only what it delivered. */
  #gen = 0;
  readonly #said = new OncePer(MANAGED_REPEAT_MS);
  #refusedSinceLine = 0;
  #commitBackoff = RECONNECT_BASE_MS;

  constructor(ctx: TopicTaskContext, topic: string, managed?: ManagedSubscriptionSetting) {
    this.#c = ctx;
    this.#topic = topic;
    this.#key = checkpointKey(topic);
    this.#eventType = eventTypeOf(topic);
    this.#rate = sampleRateFor(topic, ctx.settings.sample);
    this.#managed = managed;
    this.#attrs = managed ? { topic, subscription: nameOf(managed) } : { topic };
    ctx.m.reconnects.add(0, this.#attrs);
  }

  /** Runs until stop; always leaves exactly one sentinel on the bridge. */
  async run(): Promise<void> {
    // Only what the run committed (after Loki accepted it) is ever committed to Salesforce.
    this.#unwatch = this.#managed
      ? this.#c.state.watchCommits?.((key, value) => {
          if (key === this.#key) this.#commit(value);
        })
      : undefined;
    try {
      await this.#loop();
    } finally {
      // A lingering managed stream still takes the drain's commits; it unwatches when it closes.
      if (!this.#lingering) this.#unwatch?.();
      this.#c.m.streamUp.record(0, this.#attrs);
      this.#c.bridge.sentinel();
    }
  }

  /**
   * The run's drain has committed all it will: the lingering managed stream (if any) closes once
   * Salesforce answered the last commit sent, or after FINISH_MS. Resolves when it is closed.
   */
  finish(): Promise<void> {
    const linger = this.#lingering;
    if (!linger) return Promise.resolve();
    this.#finishing = true;
    if (this.#lastSentAcknowledged()) linger.close();
    else {
      void this.#c.clock
        .sleep(FINISH_MS, linger.signal)
        .then(() => {
          linger.close();
        })
        .catch(() => undefined);
    }
    return linger.closed;
  }

  /** Resolves once no managed stream of this task is open (at once when none lingers). */
  closed(): Promise<void> {
    return this.#lingering?.closed ?? Promise.resolve();
  }

  #lastSentAcknowledged(): boolean {
    return this.#sent === undefined || this.#sent === this.#acked;
  }

  async #sleep(ms: number): Promise<void> {
    await this.#c.clock.sleep(ms, this.#c.signal).catch(() => undefined);
  }

  async #loop(): Promise<void> {
    const { signal, log, m, bridge } = this.#c;
    let backoff = RECONNECT_BASE_MS;
    let loaded = false;
    let attempts = 0;
    while (!signal.aborted) {
      if (!loaded) {
        try {
          await this.#load();
          loaded = true;
        } catch (err) {
          if (stopped(signal)) return;
          log.warn({ topic: this.#topic, err: String(err) }, "pubsub checkpoint load failed; retrying");
          await this.#sleep(jittered(backoff, this.#c.clock));
          backoff = Math.min(backoff * 2, RECONNECT_CAP_MS);
          continue;
        }
      }
      if (attempts++ > 0) {
        m.reconnects.add(1, this.#attrs);
        log.info({ topic: this.#topic, preset: this.#preset }, "reconnecting");
      }
      let first = true;
      // A managed stream outlives the stop (it lingers for the drain's commits), so it has its own.
      const streamStop = new AbortController();
      let it: AsyncIterator<ManagedItem> | undefined;
      let pending: Promise<IteratorResult<ManagedItem>> | undefined;
      try {
        const items = await this.#open(this.#managed ? streamStop.signal : signal);
        if (!items) {
          await this.#sleep(jittered(RECONNECT_CAP_MS, this.#c.clock));
          continue;
        }
        it = items[Symbol.asyncIterator]();
        for (;;) {
          pending = it.next();
          // An abort rejects here and ends the task (the catch below); `pending` is left to a linger.
          const next = await abortable(pending, signal);
          if (stopped(signal)) return;
          pending = undefined;
          if (next.done === true) break;
          const item = next.value;
          if (first) {
            // A connection that delivers anything is healthy: session churn must not ratchet backoff.
            first = false;
            backoff = RECONNECT_BASE_MS;
            m.streamUp.record(1, this.#attrs);
            this.#said.clear();
            this.#flushCommit();
          }
          if (item.kind === "commit") {
            this.#answered(item);
          } else if (item.kind === "keepalive") {
            if (this.#replayId?.equals(item.replayId)) continue;
            // A managed stream's keepalive may name a position this run already passed.
            if (this.#managed && !this.#deliveredNow(item.replayId)) continue;
            this.#advance(item.replayId);
            await bridge.put(LogEntry.checkpointOnly(this.#token(item.replayId), this.#nowNs()), signal);
          } else {
            // Re-delivered after a reconnect: this run already handed it to the pipeline.
            if (this.#managed && !this.#deliveredNow(item.replayId)) continue;
            const entry = this.#shape(item);
            this.#advance(item.replayId);
            await bridge.put(entry, signal);
          }
        }
        if (stopped(signal)) return;
        m.streamUp.record(0, this.#attrs);
        backoff = RECONNECT_BASE_MS;
        await this.#sleep(jittered(backoff, this.#c.clock));
      } catch (err) {
        if (stopped(signal)) return;
        m.streamUp.record(0, this.#attrs);
        const refused = this.#managed ? this.#refused(err) : undefined;
        if (refused === undefined) this.#classify(err);
        // Salesforce serves one subscriber: a busy subscription is free again within seconds.
        const wait = refused === undefined || refused === "busy" ? backoff : RECONNECT_CAP_MS;
        await this.#sleep(jittered(wait, this.#c.clock));
        backoff = Math.min(backoff * 2, RECONNECT_CAP_MS);
      } finally {
        const stream = this.#stream;
        this.#stream = undefined;
        if (stream && it && stopped(signal)) this.#linger(stream, it, pending, streamStop);
        else {
          pending?.catch(() => undefined);
          streamStop.abort();
          // The generator may sit at a yield: return() runs its cleanup (after a pending next settles).
          void it?.return?.().catch(() => undefined);
        }
      }
    }
  }

  /**
   * The run stopped with the managed stream open: keep it open (asking for no more events) so the
   * drain's last commits reach Salesforce, reading only their answers, until finish() or LINGER_MS.
   */
  #linger(
    stream: ManagedStream,
    it: AsyncIterator<ManagedItem>,
    pending: Promise<IteratorResult<ManagedItem>> | undefined,
    streamStop: AbortController,
  ): void {
    stream.drain();
    this.#stream = stream;
    const close = (): void => {
      streamStop.abort();
    };
    const timer = this.#c.clock.sleep(LINGER_MS, streamStop.signal).then(close, () => undefined);
    const closed = (async () => {
      let next = pending ?? it.next();
      for (;;) {
        const r = await next.catch(() => undefined);
        if (!r || r.done === true) return;
        if (r.value.kind === "commit") {
          this.#answered(r.value);
          if (this.#finishing && this.#lastSentAcknowledged()) return;
        }
        next = it.next();
      }
    })().finally(() => {
      close();
      void it.return?.().catch(() => undefined);
      void timer;
      this.#stream = undefined;
      this.#lingering = undefined;
      this.#unwatch?.();
    });
    this.#lingering = { close, closed, signal: streamStop.signal };
  }

  /** The stream's items: Subscribe from our position, or the managed subscription (undefined: not now). */
  async #open(signal: AbortSignal): Promise<AsyncIterable<ManagedItem> | undefined> {
    const { client, settings } = this.#c;
    const numRequested = settings.default_num_requested;
    const managed = this.#managed;
    if (!managed)
      return client.subscribe(
        { topic: this.#topic, preset: this.#preset, replayId: this.#replayId, numRequested },
        signal,
      );
    if (!client.managedSubscribe) throw new Error("this Pub/Sub client cannot run managed subscriptions");
    if (!(await this.#topicMatches(managed, signal))) return undefined;
    this.#gen++;
    this.#stream = client.managedSubscribe(
      { subscription: refOf(managed), topic: this.#topic, numRequested },
      signal,
    );
    return this.#stream;
  }

  /**
   * The subscription's record names the topic the config expects (else it is not streamed: its
   * events would carry the wrong labels). A record that cannot be read is streamed unchecked.
   */
  async #topicMatches(managed: ManagedSubscriptionSetting, signal: AbortSignal): Promise<boolean> {
    const describe = this.#c.describeManaged;
    if (!describe) return true;
    let found: ManagedSubscriptionInfo | undefined;
    try {
      found = await describe(refOf(managed), signal);
    } catch (err) {
      if (stopped(signal)) return false;
      if (this.#said.due("lookup", this.#c.clock.now()))
        this.#c.log.warn(
          { topic: this.#topic, subscription: nameOf(managed), err: String(err) },
          `cannot read managed subscription ${nameOf(managed)} from the Tooling API (reading it needs the ` +
            `View Setup and Configuration permission); streaming it without checking its topic`,
        );
      return true;
    }
    // Absent: ManagedSubscribe itself says NOT_FOUND, with the line for it.
    if (!found || found.topic === "" || found.topic === this.#topic) return true;
    this.#c.m.managedRefusals.add(1, { ...this.#attrs, reason: "topic_mismatch" });
    if (this.#said.due("mismatch", this.#c.clock.now()))
      this.#c.log.error(
        { topic: this.#topic, subscription: nameOf(managed), carries: found.topic },
        topicMismatchLine(managed, found),
      );
    return false;
  }

  /** A refusal of the managed subscription itself, said in one line; undefined: not one. */
  #refused(err: unknown): ManagedRefusal | undefined {
    const managed = this.#managed!;
    const refusal = refusalOf(err);
    if (refusal === undefined) return undefined;
    this.#c.m.managedRefusals.add(1, { ...this.#attrs, reason: refusal });
    if (this.#said.due(refusal, this.#c.clock.now())) {
      const where = this.#c.org.name ? `org ${this.#c.org.name}` : "the org";
      const line = refusalLine(refusal, managed, err, where);
      const fields = { topic: this.#topic, subscription: nameOf(managed) };
      if (refusal === "busy") this.#c.log.warn(fields, line);
      else this.#c.log.error(fields, line);
    }
    return refusal;
  }

  /** The run committed `value` for this key (Loki holds everything up to it): tell Salesforce. */
  #commit(value: string): void {
    this.#committed = value;
    this.#flushCommit();
  }

  /** Records a managed stream's delivery of `id`; false when this run had handed it out before. */
  #deliveredNow(id: Buffer): boolean {
    const fresh = this.#unacked.delivered(id.toString("hex"), this.#gen);
    // A re-delivery may be the very id a commit waits for (the stream has now delivered it).
    if (!fresh) this.#flushCommit();
    return fresh;
  }

  #flushCommit(): void {
    const value = this.#committed;
    if (value === undefined || value === this.#sent || !this.#stream) return;
    const id = decodeReplayId(value);
    // Only what the open stream delivered: after a reconnect, it waits until the stream re-delivers it.
    if (!id || !this.#unacked.deliveredBy(id.toString("hex"), this.#gen)) return;
    if (this.#stream.commit(id) === undefined) return;
    this.#sent = value;
    this.#c.m.managedCommits.add(1, { ...this.#attrs, outcome: "sent" });
  }

  /** Salesforce's answer to our commits (it may answer several with one). */
  #answered(answer: CommitAnswer): void {
    const managed = this.#managed!;
    if (answer.error === undefined) {
      this.#unacked.acknowledged(answer.replayId.toString("hex"));
      if (this.#sent !== undefined && decodeReplayId(this.#sent)?.equals(answer.replayId))
        this.#acked = this.#sent;
      this.#c.m.managedCommits.add(1, { ...this.#attrs, outcome: "committed" });
      this.#commitBackoff = RECONNECT_BASE_MS;
      return;
    }
    this.#c.m.managedCommits.add(1, { ...this.#attrs, outcome: "refused" });
    this.#refusedSinceLine++;
    // The newest commit was refused: send it again after a backoff, so a quiet topic does not leave
    // Salesforce behind until its next event. An older one refused is already superseded.
    if (this.#sent !== undefined && decodeReplayId(this.#sent)?.equals(answer.replayId)) {
      this.#sent = undefined;
      const wait = this.#commitBackoff;
      this.#commitBackoff = Math.min(wait * 2, MAX_COMMIT_BACKOFF_MS);
      void this.#c.clock
        .sleep(jittered(wait, this.#c.clock), this.#c.signal)
        .then(() => {
          this.#flushCommit();
        })
        .catch(() => undefined);
    }
    if (!this.#said.due("commit", this.#c.clock.now())) return;
    this.#c.log.error(
      { topic: this.#topic, subscription: nameOf(managed), replayId: answer.replayId.toString("hex") },
      commitRefusedLine(managed, answer.error, this.#refusedSinceLine),
    );
    this.#refusedSinceLine = 0;
  }

  #advance(replayId: Buffer): void {
    this.#replayId = replayId;
    this.#preset = "CUSTOM";
  }

  #nowNs(): bigint {
    return msToNs(this.#c.clock.now());
  }

  #token(replayId: Buffer): { key: string; value: string } {
    return { key: this.#key, value: encodeReplayId(replayId) };
  }

  async #load(): Promise<void> {
    if (this.#managed) {
      const ours = await this.#c.state.load(this.#key);
      this.#c.log.info(
        {
          topic: this.#topic,
          subscription: nameOf(this.#managed),
          checkpoint: ours === undefined ? "none" : ours,
        },
        "subscribing through the managed subscription: Salesforce resumes after its committed replay id",
      );
      return;
    }
    const configured: ReplayPresetName =
      this.#c.settings.replay_preset === "CUSTOM" ? "LATEST" : this.#c.settings.replay_preset;
    const stored = await this.#c.state.load(this.#key);
    this.#replayId = undefined;
    this.#preset = configured;
    if (stored !== undefined) {
      const id = decodeReplayId(stored);
      if (id) {
        this.#replayId = id;
        this.#preset = "CUSTOM";
      } else {
        // A position was stored and is lost: whatever the configured preset, only the operator's
        // invalid_checkpoint choice decides between duplicates (EARLIEST) and a gap (LATEST).
        this.#preset = this.#fallback();
        const shownKey = this.#c.org.name ? `org=${this.#c.org.name}:${this.#key}` : this.#key;
        this.#c.m.checkpointLoadErrors.add(1, { source: "pubsub" });
        this.#c.log.error(
          { topic: this.#topic, key: shownKey, preset: this.#preset },
          `checkpoint ${shownKey} holds ${JSON.stringify(stored.slice(0, 40))}, which is not a replay id; ` +
            `subscribing with ${this.#preset}: ${this.#fallbackConsequence()}`,
        );
      }
    }
    this.#c.log.info(
      { topic: this.#topic, preset: this.#preset, resuming: this.#replayId !== undefined },
      "subscribing",
    );
  }

  /** The preset that replaces a stored position that cannot be used. */
  #fallback(): "EARLIEST" | "LATEST" {
    return this.#c.settings.invalid_checkpoint === "latest" ? "LATEST" : "EARLIEST";
  }

  /** What the fallback costs, and the key that chooses the other one; for the ERROR line. */
  #fallbackConsequence(): string {
    const key = `${this.#c.org.name ? `org ${this.#c.org.name}'s ` : ""}sources.pubsub.invalid_checkpoint`;
    return this.#fallback() === "EARLIEST"
      ? `events up to the topic's retention (72 h) are redelivered, none is skipped; set ${key}: latest to skip to new events instead`
      : `events since the lost position are skipped (${key} is latest); set it to earliest to redeliver them instead`;
  }

  #classify(err: unknown): void {
    const { log, m } = this.#c;
    const what = describeGrpcError(err);
    if (grpcCode(err) !== status.INVALID_ARGUMENT) {
      log.warn({ topic: this.#topic, err: what }, "stream error");
      return;
    }
    if (this.#preset !== "CUSTOM") {
      log.error(
        { topic: this.#topic, err: what },
        "Salesforce rejected the subscription (INVALID_ARGUMENT); check sources.pubsub.default_num_requested (1..100) and the topic name",
      );
      return;
    }
    if (replayRejection(err) === "other") {
      // A trailer that names something else: keep the position rather than silently re-drain 72 h.
      log.error(
        { topic: this.#topic, err: what },
        "INVALID_ARGUMENT not about the replay id; keeping position",
      );
      return;
    }
    m.replayFallbacks.add(1, this.#attrs);
    this.#replayId = undefined;
    this.#preset = this.#fallback();
    log.error(
      { topic: this.#topic, err: what, preset: this.#preset },
      `stored replay id rejected as corrupted or expired; resubscribing from ${this.#preset}: ${this.#fallbackConsequence()}`,
    );
  }

  /** Transform, sample, then shape; a dropped or sampled-out event still carries its replay id. */
  #shape(ev: DecodedEvent): LogEntry {
    const token = this.#token(ev.replayId);
    const p = ev.payload;
    if (this.#c.transform && !this.#c.transform(p)) return LogEntry.checkpointOnly(token, this.#nowNs());
    if (this.#rate < 1 && !shouldKeep(ev.replayId.toString("hex"), this.#rate)) {
      this.#c.m.sampledOut.add(1, { source: "pubsub", event_type: this.#eventType });
      return LogEntry.checkpointOnly(token, this.#nowNs());
    }
    let ts = eventTimestampNs(p);
    if (ts === undefined) {
      // The topic's last good time keeps a redelivered event's timestamp stable (#42).
      ts = pickTimestamp(p, [], this.#lastGoodNs, this.#c.clock.now()).ns;
      this.#c.m.timestampFallbacks.add(1, { source: "pubsub" });
    } else {
      this.#lastGoodNs = ts;
    }
    return new LogEntry({
      timestampNs: ts,
      labels: { source: "pubsub", event_type: this.#eventType },
      line: canonicalJson(p),
      structuredMetadata: routeFields(p, this.#c.metadataFields),
      checkpoint: token,
    });
  }
}

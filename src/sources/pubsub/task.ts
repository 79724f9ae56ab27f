// One topic's subscription loop (§4.2): load the position inside the retry loop, subscribe, shape,
// enqueue (blocking when the bridge is full), reconnect from the last id seen, classify failures.
import { status } from "@grpc/grpc-js";
import type { Counter, Gauge } from "@opentelemetry/api";
import { LogEntry, msToNs } from "../../model.ts";
import type { Clock } from "../../util/clock.ts";
import type { Logger } from "../../obs/logger.ts";
import type { PubSubSubscriber, DecodedEvent } from "../../salesforce/pubsub/client.ts";
import { describeGrpcError, grpcCode, replayRejection } from "../../salesforce/pubsub/errors.ts";
import type { ReplayPresetName } from "../../salesforce/pubsub/proto.ts";
import type { CheckpointReader } from "../source.ts";
import type { Bridge } from "./bridge.ts";
import { checkpointKey, decodeReplayId, encodeReplayId } from "./replay.ts";
import { sampleRateFor } from "./sample.ts";
import type { OrgIdentity, PayloadTransform, PubSubSettings } from "./settings.ts";
import { eventTimestampNs } from "./shape.ts";
import { canonicalJson } from "../shaping/json.ts";
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
}

export class TopicTask {
  readonly #c: TopicTaskContext;
  readonly #topic: string;
  readonly #key: string;
  readonly #eventType: string;
  readonly #rate: number;
  readonly #attrs: { topic: string };
  #preset: ReplayPresetName = "LATEST";
  #replayId: Buffer | undefined;
  #lastGoodNs: bigint | undefined;

  constructor(ctx: TopicTaskContext, topic: string) {
    this.#c = ctx;
    this.#topic = topic;
    this.#key = checkpointKey(topic);
    this.#eventType = eventTypeOf(topic);
    this.#rate = sampleRateFor(topic, ctx.settings.sample);
    this.#attrs = { topic };
    ctx.m.reconnects.add(0, this.#attrs);
  }

  /** Runs until stop; always leaves exactly one sentinel on the bridge. */
  async run(): Promise<void> {
    try {
      await this.#loop();
    } finally {
      this.#c.m.streamUp.record(0, this.#attrs);
      this.#c.bridge.sentinel();
    }
  }

  async #sleep(ms: number): Promise<void> {
    await this.#c.clock.sleep(ms, this.#c.signal).catch(() => undefined);
  }

  async #loop(): Promise<void> {
    const { signal, log, m, client, bridge } = this.#c;
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
      try {
        const items = client.subscribe(
          {
            topic: this.#topic,
            preset: this.#preset,
            replayId: this.#replayId,
            numRequested: this.#c.settings.default_num_requested,
          },
          signal,
        );
        for await (const item of items) {
          if (stopped(signal)) return;
          if (first) {
            // A connection that delivers anything is healthy: session churn must not ratchet backoff.
            first = false;
            backoff = RECONNECT_BASE_MS;
            m.streamUp.record(1, this.#attrs);
          }
          if (item.kind === "keepalive") {
            if (this.#replayId?.equals(item.replayId)) continue;
            this.#advance(item.replayId);
            await bridge.put(LogEntry.checkpointOnly(this.#token(item.replayId), this.#nowNs()), signal);
          } else {
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
        this.#classify(err);
        await this.#sleep(jittered(backoff, this.#c.clock));
        backoff = Math.min(backoff * 2, RECONNECT_CAP_MS);
      }
    }
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

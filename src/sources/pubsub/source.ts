// PubSubSource (`pubsub`, the streaming lane, spec A §4): one task per topic, all merged through a
// bounded bridge into one async stream; wildcard discovery and periodic rediscovery.
import { metrics, type Meter } from "@opentelemetry/api";
import { systemClock, type Clock } from "../../util/clock.ts";
import type { Dispatcher } from "../../util/http-dispatchers.ts";
import { retry } from "../../util/retry.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import type { TokenSource } from "../../salesforce/auth.ts";
import type { PubSubSubscriber } from "../../salesforce/pubsub/client.ts";
import type { CheckpointReader, Source, SourceItem } from "../source.ts";
import { categoryOfTopic } from "../overlap.ts";
import { Bridge } from "./bridge.ts";
import { DescribeGlobalDiscoverer, type TopicDiscoverer } from "./discovery.ts";
import type { OrgIdentity, PayloadTransform, PubSubSettings } from "./settings.ts";
import { RECONNECT_BASE_MS, RECONNECT_CAP_MS, stopped } from "./backoff.ts";
import type { SourceInstruments, TopicTaskContext } from "./task.ts";
import { filterTopics, hasWildcard } from "./topics.ts";
import type { ManagedRef, ManagedSubscriptionInfo } from "../../salesforce/pubsub/managed-lookup.ts";

export type { PubSubSettings, OrgIdentity, PayloadTransform } from "./settings.ts";

export const BRIDGE_MAX_ENTRIES = 1000;
/** Entries handed to the pipeline per step: one fetch response's worth (Salesforce sends ≤ 100). */
const RUN_MAX_ENTRIES = 100;
const DISCOVERY_ATTEMPTS = 3;

export interface PubSubSourceOptions {
  settings: PubSubSettings;
  auth: TokenSource;
  org: OrgIdentity;
  /** For describeGlobal discovery (default "60.0"). */
  apiVersion?: string;
  /** Defaults to a PubSubClient on `settings.endpoint`, created per run and closed after it. */
  client?: PubSubSubscriber;
  /** Defaults to describeGlobal; only used when `topics` holds `*`. */
  discoverer?: TopicDiscoverer;
  /** The org's Salesforce connections, for describeGlobal (connections.ts). */
  http?: Dispatcher;
  /** Categories other sources of this org own explicitly; discovered topics in them are skipped. */
  ownedCategories?: ReadonlySet<string>;
  /** `sink.loki.structured_metadata_fields`. */
  structuredMetadataFields?: readonly string[];
  transform?: PayloadTransform;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  bridgeMaxEntries?: number;
  /** Passed to the default client; 0 disables the stall watchdog. */
  stallTimeoutMs?: number;
}

export class PubSubSource implements Source {
  readonly name = "pubsub" as const;
  readonly #o: PubSubSourceOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #meter: Meter;
  readonly #m: SourceInstruments;
  readonly #discoverer: TopicDiscoverer;
  /** The managed subscriptions' tasks of the latest run, for settled(). */
  #managedTasks: { finish(): Promise<void> }[] = [];

  constructor(opts: PubSubSourceOptions) {
    this.#o = opts;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({
      component: "pubsub",
      ...(opts.org.name ? { org: opts.org.name } : {}),
    });
    this.#meter = opts.meter ?? metrics.getMeter("sf2loki");
    const meter = this.#meter;
    this.#m = {
      streamUp: meter.createGauge("sf2loki_pubsub_stream_up", { description: "1 healthy / 0 erroring" }),
      reconnects: meter.createCounter("sf2loki_pubsub_reconnects", { description: "Stream reconnects" }),
      replayFallbacks: meter.createCounter("sf2loki_pubsub_replay_fallbacks", {
        description: "Resubscribed from EARLIEST after a rejected replay id",
      }),
      checkpointLoadErrors: meter.createCounter("sf2loki_checkpoint_load_errors", {
        description: "Stored checkpoints that could not be used",
      }),
      timestampFallbacks: meter.createCounter("sf2loki_timestamp_fallbacks", {
        description: "Entries whose timestamp came from a fallback",
      }),
      sampledOut: meter.createCounter("sf2loki_entries_sampled_out", {
        description: "Entries dropped by sampling",
      }),
      managedCommits: meter.createCounter("sf2loki_pubsub_managed_commits", {
        description:
          "Replay-id commits of managed subscriptions, by outcome: sent, committed (acknowledged), refused",
      }),
      managedRefusals: meter.createCounter("sf2loki_pubsub_managed_refusals", {
        description:
          "Managed subscriptions Salesforce would not serve, by reason: missing, stopped, busy, topic_mismatch, other",
      }),
    };
    this.#discoverer =
      opts.discoverer ??
      new DescribeGlobalDiscoverer(
        opts.auth,
        opts.apiVersion ?? "60.0",
        (found) => {
          const pairs = opts.settings.discover_event_store_pairs === true;
          this.#log.info(
            { eventStream: found.streams, ...(pairs ? { storePair: found.storePairs } : {}) },
            "topics discovered",
          );
        },
        {
          storePairs: opts.settings.discover_event_store_pairs === true,
          ...(opts.http ? { http: opts.http } : {}),
        },
      );
  }

  /**
   * The run's drain committed all it will: managed streams that stayed open for its commits close once
   * Salesforce answered the last one (bounded).
   */
  async settled(): Promise<void> {
    const tasks = this.#managedTasks;
    this.#managedTasks = [];
    await Promise.allSettled(tasks.map((t) => t.finish()));
  }

  /**
   * Explicit topics after dedupe and include/exclude, and the managed subscriptions' topics: what the
   * overlap guard and ELF exclusion see.
   */
  explicitTopics(): string[] {
    const s = this.#o.settings;
    return [...filterTopics(s.topics, { include: s.include, exclude: s.exclude }), ...this.#managedTopics()];
  }

  #managedTopics(): string[] {
    return (this.#o.settings.managed_subscriptions ?? []).map((m) => m.topic);
  }

  async *events(state: CheckpointReader, outer: AbortSignal): AsyncGenerator<SourceItem, void, undefined> {
    const s = this.#o.settings;
    if (!s.enabled) return;
    const stop = new AbortController();
    const signal = AbortSignal.any([outer, stop.signal]);
    // A fresh bridge per run: charges of entries that died with an old run cannot leak (#92).
    const bridge = new Bridge(this.#o.bridgeMaxEntries ?? BRIDGE_MAX_ENTRIES, s.bridge_max_bytes);
    // The gRPC client, Avro and the topic task load with the first run, not at startup (~25 MiB of
    // RSS a daemon without Pub/Sub topics never pays).
    const [{ TopicTask }, { PubSubClient }] = await Promise.all([
      import("./task.ts"),
      import("../../salesforce/pubsub/client.ts"),
    ]);
    const ownClient = this.#o.client === undefined;
    const client =
      this.#o.client ??
      new PubSubClient({
        endpoint: s.endpoint,
        auth: this.#o.auth,
        insecure: s.insecure === true,
        clock: this.#clock,
        logger: this.#log,
        meter: this.#meter,
        ...(this.#o.stallTimeoutMs !== undefined ? { stallTimeoutMs: this.#o.stallTimeoutMs } : {}),
      });
    const ctx: TopicTaskContext = {
      state,
      bridge,
      client,
      settings: s,
      org: this.#o.org,
      clock: this.#clock,
      log: this.#log,
      m: this.#m,
      metadataFields: this.#o.structuredMetadataFields ?? [],
      transform: this.#o.transform,
      signal,
      describeManaged: (ref, sig) => this.#describeManaged(ref, sig),
    };
    const tasks: Promise<void>[] = [];
    const managedTasks: InstanceType<typeof TopicTask>[] = [];
    this.#managedTasks = managedTasks;
    const running = new Set<string>();
    let producers = 0;
    const spawn = (topic: string): void => {
      running.add(topic);
      producers++;
      tasks.push(new TopicTask(ctx, topic).run());
    };

    for (const t of filterTopics(s.topics, { include: s.include, exclude: s.exclude })) spawn(t);
    for (const m of s.managed_subscriptions ?? []) {
      // A managed topic is never also subscribed: discovery skips it like any running topic.
      running.add(m.topic);
      producers++;
      const task = new TopicTask(ctx, m.topic, m);
      managedTasks.push(task);
      tasks.push(task.run());
    }
    const wildcard = hasWildcard(s.topics);
    if (wildcard) {
      const found = await this.#discoverWithRetries(signal);
      if (found) for (const t of this.#acceptDiscovered(found, running)) spawn(t);
      if (s.rediscovery_interval > 0) {
        producers++;
        tasks.push(this.#rediscover(signal, bridge, running, spawn));
      }
    }
    try {
      while (producers > 0) {
        const run = await bridge.takeRun(signal, RUN_MAX_ENTRIES);
        if (run === null) producers--;
        else yield run;
      }
    } catch (err) {
      if (!signal.aborted) throw err;
    } finally {
      stop.abort();
      bridge.clear();
      await Promise.allSettled(tasks);
      // A managed stream may still be open for the drain's commits: the channel closes after it.
      const closing = Promise.allSettled(managedTasks.map((t) => t.closed()));
      if (ownClient && client instanceof PubSubClient)
        void closing.then(() => {
          client.close();
        });
    }
  }

  async #describeManaged(ref: ManagedRef, signal: AbortSignal): Promise<ManagedSubscriptionInfo | undefined> {
    const { lookupManagedSubscription } = await import("../../salesforce/pubsub/managed-lookup.ts");
    return lookupManagedSubscription(this.#o.auth, this.#o.apiVersion ?? "60.0", ref, signal, this.#o.http);
  }

  /** Filtered, not already running, not owned by another source of this org (logged per skip). */
  #acceptDiscovered(found: readonly string[], running: ReadonlySet<string>): string[] {
    const s = this.#o.settings;
    const owned = this.#o.ownedCategories;
    const out: string[] = [];
    for (const topic of filterTopics(found, { include: s.include, exclude: s.exclude })) {
      if (running.has(topic)) continue;
      const category = categoryOfTopic(topic);
      if (owned?.has(category)) {
        this.#log.info(
          { topic, category },
          "discovered topic skipped: its category is owned by another source",
        );
        continue;
      }
      out.push(topic);
    }
    return out;
  }

  async #discoverWithRetries(signal: AbortSignal): Promise<string[] | undefined> {
    try {
      return await retry(({ signal: s }) => this.#discoverer.discover(s), {
        policy: {
          maxAttempts: DISCOVERY_ATTEMPTS,
          backoffMs: (attempt, random) => {
            const b = Math.min(RECONNECT_CAP_MS, RECONNECT_BASE_MS * 2 ** (attempt - 1));
            return b + random() * (b / 2);
          },
        },
        clock: this.#clock,
        isTransient: () => true,
        signal,
      });
    } catch (err) {
      if (!signal.aborted) {
        this.#log.error(
          { err: String(err) },
          "topic discovery failed; wildcard topics dropped for this pass",
        );
      }
      return undefined;
    }
  }

  async #rediscover(
    signal: AbortSignal,
    bridge: Bridge,
    running: Set<string>,
    spawn: (topic: string) => void,
  ): Promise<void> {
    const interval = this.#o.settings.rediscovery_interval;
    try {
      while (!signal.aborted) {
        await this.#clock.sleep(interval * (0.9 + 0.2 * this.#clock.random()), signal).catch(() => undefined);
        if (stopped(signal)) return;
        let found: string[];
        try {
          found = await this.#discoverer.discover(signal);
        } catch (err) {
          if (!stopped(signal))
            this.#log.warn({ err: String(err) }, "topic rediscovery failed; will try next interval");
          continue;
        }
        const fresh = this.#acceptDiscovered(found, running);
        if (fresh.length > 0) this.#log.info({ topics: fresh }, "new topics discovered; subscribing");
        for (const t of fresh) spawn(t);
      }
    } finally {
      bridge.sentinel();
    }
  }
}

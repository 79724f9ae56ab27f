// The Pub/Sub source's slice of the config (snake_case exactly as in the YAML) and the org it runs for.
import type { ReplayPresetName } from "../../salesforce/pubsub/proto.ts";

export type InvalidCheckpointPolicy = "earliest" | "latest";

export interface PubSubSettings {
  enabled: boolean;
  endpoint: string;
  /** Credits per FetchRequest, 1..100. */
  default_num_requested: number;
  replay_preset: ReplayPresetName;
  /**
   * Where a topic resumes when its stored position cannot be used; default `earliest`: duplicates
   * bounded by the topic's retention are recoverable, a gap is not.
   */
  invalid_checkpoint?: InvalidCheckpointPolicy;
  /** Explicit topics and/or the `*` discovery marker. */
  topics: string[];
  include: string[];
  exclude: string[];
  /** Milliseconds; 0 = discover at startup only. */
  rediscovery_interval: number;
  /** Topic glob → keep rate in (0, 1]; first match in map order wins. */
  sample: Record<string, number>;
  /** 0 disables byte accounting on the bridge. */
  bridge_max_bytes: number;
  /** Plaintext gRPC; only for a loopback simulator. */
  insecure?: boolean;
  /** `*` also discovers `/event/<X>Event` where `<X>EventStore` exists (off: Python's discovery). */
  discover_event_store_pairs?: boolean;
  /** Topics streamed through ManagedSubscribe: Salesforce keeps their replay (docs/pubsub.md). */
  managed_subscriptions?: ManagedSubscriptionSetting[];
}

/** One `sources.pubsub.managed_subscriptions` entry: exactly one of `name` and `id`. */
export interface ManagedSubscriptionSetting {
  name?: string | undefined;
  id?: string | undefined;
  topic: string;
}

export interface OrgIdentity {
  /** "" in single-org mode. */
  name: string;
  orgId?: string;
  environment: string;
}

/** A compiled transform chain (owned by the egress module); returns false to drop the row. */
export type PayloadTransform = (payload: Record<string, unknown>) => boolean;

/** Whether the section streams anything: topics to subscribe to, or managed subscriptions. */
export function pubsubActive(
  s: Pick<PubSubSettings, "enabled" | "topics" | "managed_subscriptions">,
): boolean {
  return s.enabled && (s.topics.length > 0 || (s.managed_subscriptions?.length ?? 0) > 0);
}

/** Every topic the section streams: `topics` as written (discovery markers included) and the managed ones. */
export function streamedTopics(s: Pick<PubSubSettings, "topics" | "managed_subscriptions">): string[] {
  return [...s.topics, ...(s.managed_subscriptions ?? []).map((m) => m.topic)];
}

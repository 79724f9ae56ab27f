// What the simulated org's HTTP and gRPC faces share: identity, issued tokens, topics, queued faults.
// Several orgs can sit behind one HTTP and one gRPC port; each keeps all of this to itself.
import type { SimRestOptions } from "../salesforce-rest/handler.ts";
import type { GrpcFault } from "./grpc-fault.ts";
import type { SimPollingData } from "../salesforce-rest/generate.ts";
import { TopicLog } from "./topic-log.ts";
import { SimManagedSubscriptions, type SimManagedSubscriptionSpec } from "./managed-subscriptions.ts";

export interface SimOrgOptions {
  /** Seeds the event generator and the CSV cells; same seed, same events. */
  seed?: number;
  /** Events each topic starts with (default 0). */
  eventsPerTopic?: number;
  /** Pub/Sub topics (default none: a polling-only org). */
  topics?: string[];
  /** Replay window in events per topic (default: unlimited). */
  retentionEvents?: number;
  clientId?: string;
  /** Accepts client_credentials with this secret when set. */
  clientSecret?: string;
  /** Accepts JWT bearer assertions signed by the matching private key when set. */
  publicKeyPem?: string;
  /** Expected JWT `sub` (default: any). */
  username?: string;
  orgId?: string;
  /** Starts every Pub/Sub EventIdentifier (default `sim`): orgs sharing one sim give each their own. */
  eventIdPrefix?: string;
  /** Idle keepalive period on streams with pending credit (Salesforce: ≤ 270 s). */
  keepaliveMs?: number;
  /** Most events in one FetchResponse. */
  maxBatch?: number;
  /** Serve gRPC over TLS with this certificate instead of plaintext (the bench needs it). */
  tls?: { certPem: string; keyPem: string };
  /** Extra sObject names for describeGlobal, beside those derived from the topics. */
  extraSObjects?: string[];
  /**
   * The REST side's data and behaviour as given (records, files, logs, limits, page size, wire
   * faults); only tokens this org issued are accepted.
   */
  rest?: Omit<SimRestOptions, "validToken" | "moreSObjects" | "seed">;
  /** Generated polling data in the recent past, added to `rest`'s (see salesforce-rest/generate.ts). */
  polling?: SimPollingData;
  /** ManagedEventSubscription records the org starts with (ManagedSubscribe, Tooling API). */
  managedSubscriptions?: SimManagedSubscriptionSpec[];
  /**
   * The session timeout: a token stops working this many ms (by the org's clock) after it was minted,
   * and REST answers 401 INVALID_SESSION_ID, userinfo 403, Pub/Sub UNAUTHENTICATED. Absolute, not idle:
   * Salesforce's timeout is an idle one (use keeps a session alive), so this is the worst case. Default:
   * tokens never time out.
   */
  sessionTimeoutMs?: number;
}

export interface QueuedHttpFault {
  status: number;
  body: string;
}

export interface TokenClaims {
  iss?: unknown;
  sub?: unknown;
  aud?: unknown;
  exp?: unknown;
  iat?: unknown;
  jti?: unknown;
}

export const CORRUPTED_REPLAY_ID_CODE = "sfdc.platform.eventbus.grpc.subscription.fetch.replayid.corrupted";

export class SimOrgState {
  readonly orgId: string;
  readonly clientId: string;
  readonly opts: SimOrgOptions;
  readonly topics = new Map<string, TopicLog>();
  /** Tokens this org issued and has not revoked (a timed-out one stays: it still names its org). */
  readonly validTokens = new Set<string>();
  /** When each issued token was minted, by the org's clock. */
  readonly #mintedAt = new Map<string, number>();
  readonly httpFaults = new Map<string, QueuedHttpFault[]>();
  /** Pub/Sub faults queued for this org's next Subscribe / GetSchema / CUSTOM subscribe. */
  readonly subscribeFaults: GrpcFault[] = [];
  readonly schemaFaults: GrpcFault[] = [];
  customRejection: GrpcFault | undefined;
  readonly managed = new SimManagedSubscriptions();
  subscribeCalls = 0;
  managedSubscribeCalls = 0;
  schemaCalls = 0;
  instanceUrl = "";
  loginUrl = "";
  tokenRequests = 0;
  mints = 0;
  userinfoCalls = 0;
  describeCalls = 0;
  lastClaims: TokenClaims | undefined;
  #tokenSeq = 0;
  readonly #seed: number;
  readonly #idPrefix: string;
  readonly #retention: number;
  /** The org's clock (the REST side's when given): events are dated by it, never in the future. */
  readonly #now: () => number;

  constructor(opts: SimOrgOptions) {
    const clock = opts.rest?.clock;
    this.#now = clock ? () => clock.now() : Date.now;
    this.opts = opts;
    this.orgId = opts.orgId ?? "00DSIM0000000001AA";
    this.clientId = opts.clientId ?? "3MVG9sim.client.id";
    this.#seed = opts.seed ?? 1;
    this.#idPrefix = opts.eventIdPrefix ?? "sim";
    this.#retention = opts.retentionEvents ?? Number.MAX_SAFE_INTEGER;
    for (const topic of opts.topics ?? []) this.addTopic(topic, opts.eventsPerTopic ?? 0);
    for (const spec of opts.managedSubscriptions ?? []) this.managed.create(spec);
  }

  addTopic(topic: string, events: number): void {
    if (!this.topics.has(topic))
      this.topics.set(
        topic,
        new TopicLog(topic, this.#seed, events, this.#retention, this.#now, this.#idPrefix),
      );
  }

  topic(name: string): TopicLog {
    const log = this.topics.get(name);
    if (!log) throw new Error(`sim: unknown topic ${name}`);
    return log;
  }

  issueToken(): string {
    this.#tokenSeq++;
    this.mints++;
    const token = `${this.orgId}!SIM.${this.#tokenSeq}.${Math.random().toString(36).slice(2, 10)}`;
    this.validTokens.add(token);
    this.#mintedAt.set(token, this.#now());
    return token;
  }

  /** `token` was issued here, not revoked, and its session has not timed out. */
  accepts(token: string): boolean {
    if (!this.validTokens.has(token)) return false;
    const timeout = this.opts.sessionTimeoutMs;
    return timeout === undefined || this.#now() - (this.#mintedAt.get(token) ?? 0) < timeout;
  }

  /** Every issued token stops working. */
  revokeTokens(): void {
    this.validTokens.clear();
    this.#mintedAt.clear();
  }

  /** The next queued fault for a path, consumed. */
  takeHttpFault(path: string): QueuedHttpFault | undefined {
    const queue = this.httpFaults.get(path);
    const fault = queue?.shift();
    if (queue?.length === 0) this.httpFaults.delete(path);
    return fault;
  }
}

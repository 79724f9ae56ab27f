// The Pub/Sub API client: one gRPC channel per org, Subscribe exposed as an async iterator whose
// flow-control credits are topped up only when the consumer pulls (§3.4), schemas cached (§3.5).
import {
  Client,
  Metadata,
  credentials as grpcCredentials,
  type ChannelCredentials,
  type ChannelOptions,
  type ClientDuplexStream,
  type MethodDefinition,
  status,
} from "@grpc/grpc-js";
import { metrics, type Counter, type Gauge, type Meter } from "@opentelemetry/api";
import type avsc from "avsc";
import { grpcRoute, type GrpcRoute } from "../../util/grpc-route.ts";
import { probeProxy } from "../../util/proxy-probe.ts";
import { routeGrpcLogs } from "./grpc-log.ts";
import type { ProxyEnv } from "../../util/proxy-env.ts";
import { systemClock, type Clock } from "../../util/clock.ts";
import { silentLogger, type Logger } from "../../obs/logger.ts";
import type { AccessToken, TokenSource } from "../auth.ts";
import { DecodeHealth } from "./decode-health.ts";
import { SchemaFetchError, StreamStalledError, grpcCode, isGrpcError, isUnauthenticated } from "./errors.ts";
import {
  pubSubProto,
  type CommitReplayResponse,
  type FetchRequest,
  type FetchResponse,
  type ManagedFetchRequest,
  type ManagedFetchResponse,
  type ReplayPresetName,
  type TopicInfo,
} from "./proto.ts";
import { SchemaCache } from "./schema-cache.ts";

export const DEFAULT_PUBSUB_ENDPOINT = "api.pubsub.salesforce.com:7443";
export const STALL_WATCHDOG_MS = 300_000;
/** GetTopic and GetSchema end within this many ms (DEADLINE_EXCEEDED), or at the caller's abort. */
export const UNARY_DEADLINE_MS = 30_000;
/**
 * HTTP/2 keepalive: a ping every `timeMs`, the connection dropped when one is not answered within
 * `timeoutMs`. This is what replaces a connection that died silently: until it fires, calls on the
 * channel keep going to the dead one (each ending at its own deadline).
 */
export const PUBSUB_KEEPALIVE = { timeMs: 30_000, timeoutMs: 10_000 } as const;
/** The look at the proxy after an UNAVAILABLE answers within this many ms. */
const PROXY_PROBE_MS = 3000;

export interface SubscribeRequest {
  topic: string;
  preset: ReplayPresetName;
  /** Only sent with CUSTOM; resumes after this id. */
  replayId?: Buffer | undefined;
  /** Credits per request, 1..100. */
  numRequested: number;
}

export interface DecodedEvent {
  readonly kind: "event";
  readonly topic: string;
  readonly replayId: Buffer;
  readonly schemaId: string;
  readonly payload: Record<string, unknown>;
}

/** An empty FetchResponse with a latest replay id: a safe resume point for a quiet topic. */
export interface Keepalive {
  readonly kind: "keepalive";
  readonly topic: string;
  readonly replayId: Buffer;
}

export type SubscribeItem = DecodedEvent | Keepalive;

export interface ManagedSubscribeRequest {
  /** The ManagedEventSubscription: its Tooling API record id, or its developer name. */
  subscription: { id: string } | { developerName: string };
  /** The topic the config expects it to carry: what events are labelled and decoded as. */
  topic: string;
  /** Credits per request, 1..100. */
  numRequested: number;
}

/** Salesforce's answer to one or more CommitReplayRequests (not 1:1: it may answer the last only). */
export interface CommitAnswer {
  readonly kind: "commit";
  readonly topic: string;
  readonly requestId: string;
  readonly replayId: Buffer;
  /** Set when the commit failed: `COMMIT: <message>`. */
  readonly error?: string;
}

export type ManagedItem = SubscribeItem | CommitAnswer;

/** An open managed stream: its items, and commits written into it. */
export interface ManagedStream extends AsyncIterable<ManagedItem> {
  /** Sends a CommitReplayRequest; its request id, or undefined when the stream is not open. */
  commit(replayId: Buffer): string | undefined;
  /** Asks for no more events (the stream stays open for commits and their answers). */
  drain(): void;
}

/** What the Pub/Sub source needs of the client; tests may substitute it. */
export interface PubSubSubscriber {
  subscribe(req: SubscribeRequest, signal: AbortSignal): AsyncGenerator<SubscribeItem, void, undefined>;
  /** Only the managed-subscription mode calls it; substitutes without it cannot run that mode. */
  managedSubscribe?(req: ManagedSubscribeRequest, signal: AbortSignal): ManagedStream;
}

export interface PubSubClientOptions {
  endpoint: string;
  auth: TokenSource;
  /** Plaintext gRPC; only for a loopback simulator. */
  insecure?: boolean;
  /** Overrides the channel credentials entirely (a test CA, for instance). */
  credentials?: ChannelCredentials;
  clock?: Clock;
  logger?: Logger;
  meter?: Meter;
  /** 0 disables the stall watchdog (tests whose clock jumps ahead on every sleep). */
  stallTimeoutMs?: number;
  /** Default UNARY_DEADLINE_MS (tests shorten it). */
  unaryDeadlineMs?: number;
  /** Default PUBSUB_KEEPALIVE (tests shorten it). */
  keepalive?: { timeMs: number; timeoutMs: number };
  /** Default: this process's proxy variables (tests pass their own). */
  proxy?: ProxyEnv;
}

interface ClientInstruments {
  pendingCredits: Gauge;
  streamStalls: Counter;
}

/** An open flow's call (for in-stream commits) and whether it still asks for events. */
interface FlowHandle<Req, Res> {
  call?: ClientDuplexStream<Req, Res>;
  draining?: boolean;
}

export class PubSubClient implements PubSubSubscriber {
  readonly #opts: PubSubClientOptions;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #auth: TokenSource;
  readonly #schemas: SchemaCache;
  readonly #health: DecodeHealth;
  readonly #m: ClientInstruments;
  readonly #stallMs: number;
  #channel: Client | undefined;
  /** The proxy the channel goes through, once it is built; undefined: direct. */
  #via: GrpcRoute["via"];

  constructor(opts: PubSubClientOptions) {
    this.#opts = opts;
    this.#auth = opts.auth;
    this.#clock = opts.clock ?? systemClock;
    this.#log = (opts.logger ?? silentLogger).child({ component: "pubsub-client" });
    this.#stallMs = opts.stallTimeoutMs ?? STALL_WATCHDOG_MS;
    const meter = opts.meter ?? metrics.getMeter("sf2loki");
    this.#m = {
      pendingCredits: meter.createGauge("sf2loki_pubsub_pending_credits", {
        description: "Outstanding flow-control credits per topic",
      }),
      streamStalls: meter.createCounter("sf2loki_pubsub_stream_stalls", {
        description: "Keepalive-watchdog forced reconnects",
      }),
    };
    this.#health = new DecodeHealth(
      meter.createCounter("sf2loki_decode_errors", { description: "Pub/Sub payload decode failures" }),
      meter.createCounter("sf2loki_pubsub_decode_stalls", {
        description: "Topic stuck at 100% decode failure or repeated schema-fetch failure",
      }),
      this.#log,
    );
    this.#schemas = new SchemaCache(
      (id, signal) => this.#fetchSchema(id, signal),
      meter.createGauge("sf2loki_schema_cache_size", { description: "Cached Avro schemas" }),
    );
  }

  #client(): Client {
    if (this.#channel) return this.#channel;
    const creds =
      this.#opts.credentials ??
      (this.#opts.insecure ? grpcCredentials.createInsecure() : grpcCredentials.createSsl());
    const keepalive = this.#opts.keepalive ?? PUBSUB_KEEPALIVE;
    const options: ChannelOptions = {
      // Detect NAT/LB idle drops long before the 300 s application watchdog does.
      "grpc.keepalive_time_ms": keepalive.timeMs,
      "grpc.keepalive_timeout_ms": keepalive.timeoutMs,
      "grpc.keepalive_permit_without_calls": 1,
      "grpc.http2.max_pings_without_data": 0,
      "grpc.max_receive_message_length": 64 * 1024 * 1024,
    };
    // grpc-js's own lines, as records of ours (here, not at daemon start: gRPC loads only with Pub/Sub).
    routeGrpcLogs(this.#log);
    // Through the proxy the environment names for this endpoint, decided as for every other client.
    const route = grpcRoute(this.#opts.endpoint, this.#opts.insecure === true, this.#opts.proxy);
    this.#via = route.via;
    this.#channel = new Client(route.target, creds, { ...options, ...route.options });
    return this.#channel;
  }

  /**
   * grpc-js words a proxy that refused the connection as "UNAVAILABLE: No connection established",
   * exactly as it words Salesforce being down: when the channel goes through a proxy, one look at the
   * proxy (the tunnel this channel asks for) says which it was, and the error then names the proxy.
   */
  async #namingProxy(err: unknown): Promise<unknown> {
    const via = this.#via;
    if (!via || grpcCode(err) !== status.UNAVAILABLE || !isGrpcError(err)) return err;
    const probe = await probeProxy(via.url, via.tunnelTo, PROXY_PROBE_MS);
    if (probe.ok) return err;
    const clause = `proxy ${via.url.host} (from ${via.variable}) ${probe.what}`;
    const details = `${clause}; check that the proxy is up and lets sf2loki through, or list ${via.tunnelTo.replace(/:\d+$/, "")} in NO_PROXY (was: ${err.details ?? ""})`;
    return Object.assign(new Error(`${status.UNAVAILABLE} UNAVAILABLE: ${details}`, { cause: err }), {
      code: err.code,
      details,
      metadata: err.metadata,
    });
  }

  close(): void {
    this.#channel?.close();
    this.#channel = undefined;
  }

  /** The three headers every RPC carries, built once per RPC with the token it will be judged by. */
  async #metadata(signal?: AbortSignal): Promise<{ md: Metadata; token: AccessToken }> {
    const token = await this.#auth.token(signal);
    const orgId = await this.#auth.orgId(signal);
    const md = new Metadata();
    md.set("accesstoken", token.accessToken);
    md.set("instanceurl", token.instanceUrl);
    md.set("tenantid", orgId);
    return { md, token };
  }

  /**
   * One unary RPC with fresh metadata, ended by its deadline (DEADLINE_EXCEEDED) or by the caller's
   * abort (CANCELLED); an UNAUTHENTICATED answer invalidates the token it carried.
   */
  async #unary<Req, Res>(m: MethodDefinition<Req, Res>, request: Req, signal?: AbortSignal): Promise<Res> {
    const { md, token } = await this.#metadata(signal);
    signal?.throwIfAborted();
    const deadlineMs = this.#opts.unaryDeadlineMs ?? UNARY_DEADLINE_MS;
    let onAbort: (() => void) | undefined;
    try {
      return await new Promise<Res>((resolve, reject) => {
        const call = this.#client().makeUnaryRequest(
          m.path,
          m.requestSerialize,
          m.responseDeserialize,
          request,
          md,
          { deadline: Date.now() + deadlineMs },
          (err, res) => {
            if (err || !res) reject(err ?? new Error(`empty ${m.path} response`));
            else resolve(res);
          },
        );
        onAbort = () => {
          call.cancel();
        };
        signal?.addEventListener("abort", onAbort, { once: true });
      });
    } catch (err) {
      if (isUnauthenticated(err)) this.#auth.invalidate(token.accessToken);
      throw await this.#namingProxy(err);
    } finally {
      if (onAbort) signal?.removeEventListener("abort", onAbort);
    }
  }

  async #fetchSchema(schemaId: string, signal?: AbortSignal): Promise<string> {
    return (await this.#unary(pubSubProto().getSchema, { schema_id: schemaId }, signal)).schema_json;
  }

  /** TopicInfo for doctor (#119): can_subscribe, tenant_guid, schema_id. */
  getTopic(topic: string, signal?: AbortSignal): Promise<TopicInfo> {
    return this.#unary(pubSubProto().getTopic, { topic_name: topic }, signal);
  }

  subscribe(req: SubscribeRequest, signal: AbortSignal): AsyncGenerator<SubscribeItem, void, undefined> {
    const first: FetchRequest = {
      topic_name: req.topic,
      replay_preset: req.preset,
      replay_id: req.preset === "CUSTOM" && req.replayId ? req.replayId : Buffer.alloc(0),
      num_requested: req.numRequested,
    };
    const topUp = (): FetchRequest => ({ topic_name: req.topic, num_requested: req.numRequested });
    // The flow itself, not a wrapper generator (one more hop per event): a FetchResponse has no
    // commit_response, so no commit answer is ever among its items.
    return this.#flow(pubSubProto().subscribe, first, topUp, req, signal, undefined) as AsyncGenerator<
      SubscribeItem,
      void,
      undefined
    >;
  }

  /**
   * ManagedSubscribe (beta): the subscription, not the request, says where delivery starts; `commit`
   * writes a CommitReplayRequest into the open stream, and Salesforce's answers come back as items.
   */
  managedSubscribe(req: ManagedSubscribeRequest, signal: AbortSignal): ManagedStream {
    const first: ManagedFetchRequest = {
      ...("id" in req.subscription
        ? { subscription_id: req.subscription.id }
        : { developer_name: req.subscription.developerName }),
      num_requested: req.numRequested,
    };
    const topUp = (): ManagedFetchRequest => ({ num_requested: req.numRequested });
    const open: FlowHandle<ManagedFetchRequest, ManagedFetchResponse> = {};
    let seq = 0;
    const items = this.#flow(pubSubProto().managedSubscribe, first, topUp, req, signal, open);
    return {
      [Symbol.asyncIterator]: () => items,
      commit: (replayId) => {
        const call = open.call;
        if (!call || call.writableEnded || call.destroyed) return undefined;
        const id = `c${++seq}`;
        call.write({ commit_replay_id_request: { commit_request_id: id, replay_id: replayId } });
        return id;
      },
      drain: () => {
        open.draining = true;
      },
    };
  }

  /**
   * One bidi stream with flow control: `first` opens it, `topUp` asks for more once the consumer has
   * pulled half of what was asked for, responses become decoded events, keepalives and (managed
   * streams) commit answers. `open.call` holds the call while it is open, for in-stream commits.
   */
  async *#flow<Req, Res extends FetchResponse & { commit_response?: CommitReplayResponse | null }>(
    m: MethodDefinition<Req, Res>,
    first: Req,
    topUp: () => Req,
    req: { topic: string; numRequested: number },
    signal: AbortSignal,
    open: FlowHandle<Req, Res> | undefined,
  ): AsyncGenerator<ManagedItem, void, undefined> {
    const { topic, numRequested: n } = req;
    const { md, token } = await this.#metadata(signal);
    const call: ClientDuplexStream<Req, Res> = this.#client().makeBidiStreamRequest(
      m.path,
      m.requestSerialize,
      m.responseDeserialize,
      md,
    );
    if (open) open.call = call;
    // Cancelling after the iterator has detached must not surface as an unhandled 'error' event.
    call.on("error", () => undefined);
    const watch = { stalled: false };
    const onAbort = (): void => {
      call.cancel();
    };
    signal.addEventListener("abort", onAbort, { once: true });
    const watchdog = this.#watchdog(() => {
      watch.stalled = true;
      call.cancel();
    });
    const half = Math.floor(n / 2);
    // Credit still owed by the server, counted here: the pending_num_requested of responses that
    // were already in flight when we topped up is stale, and trusting it re-requests on every one.
    let owed = n;
    try {
      call.write(first);
      for await (const resp of call as AsyncIterable<Res>) {
        watchdog.touch();
        const count = resp.events.length;
        const answer = resp.commit_response;
        if (answer) {
          // A commit's answer, not a keepalive: its latest_replay_id is not a position to commit.
          yield {
            kind: "commit",
            topic,
            requestId: answer.commit_request_id,
            replayId: answer.replay_id,
            ...(answer.error ? { error: `${answer.error.code}: ${answer.error.msg}` } : {}),
          };
        }
        if (count === 0) {
          if (answer) continue;
          // An idle server's count is current; never assume more credit than it reports.
          owed = Math.min(owed, resp.pending_num_requested);
          if (resp.latest_replay_id.length > 0) {
            yield { kind: "keepalive", topic, replayId: resp.latest_replay_id };
          }
        } else {
          owed -= count;
          yield* this.#decodeBatch(topic, resp, signal);
        }
        this.#m.pendingCredits.record(resp.pending_num_requested, { topic });
        // Reached only once the consumer has pulled every event of this response: a consumer that
        // stops pulling stops the top-ups, which is the backpressure path to Salesforce.
        if (owed <= half && !call.writableEnded && open?.draining !== true) {
          call.write(topUp());
          owed += n;
        }
      }
    } catch (err) {
      if (signal.aborted) return;
      if (watch.stalled) {
        this.#m.streamStalls.add(1, { topic });
        throw new StreamStalledError(topic, this.#stallMs);
      }
      if (isUnauthenticated(err)) this.#auth.invalidate(token.accessToken);
      throw await this.#namingProxy(err);
    } finally {
      if (open) delete open.call;
      watchdog.stop();
      signal.removeEventListener("abort", onAbort);
      call.cancel();
    }
  }

  async *#decodeBatch(
    topic: string,
    resp: FetchResponse,
    signal: AbortSignal,
  ): AsyncGenerator<DecodedEvent, void, undefined> {
    let ok = 0;
    let failed = 0;
    for (const ce of resp.events) {
      const ev = ce.event;
      if (!ev) {
        this.#health.poison(topic, new TypeError("ConsumerEvent without event"));
        failed++;
        continue;
      }
      let type: avsc.Type | undefined = this.#schemas.cached(ev.schema_id);
      if (!type) {
        try {
          type = await this.#schemas.get(ev.schema_id, signal);
        } catch (err) {
          // Not poison: skipping would let the checkpoint pass events we never shipped.
          this.#health.schemaFailure(topic, err);
          throw err instanceof SchemaFetchError
            ? err
            : new SchemaFetchError(ev.schema_id, String(err), { cause: err });
        }
      }
      let payload: Record<string, unknown>;
      try {
        payload = type.fromBuffer(ev.payload) as Record<string, unknown>;
      } catch (err) {
        this.#health.poison(topic, err);
        failed++;
        continue;
      }
      ok++;
      yield { kind: "event", topic, replayId: ce.replay_id, schemaId: ev.schema_id, payload };
    }
    this.#health.batch(topic, ok, failed);
  }

  /** Fires `onStall` when no response arrived for the whole window; one timer, re-armed lazily. */
  #watchdog(onStall: () => void): { touch(): void; stop(): void } {
    if (this.#stallMs <= 0) return { touch: () => undefined, stop: () => undefined };
    const ctl = new AbortController();
    let last = this.#clock.monotonic();
    const loop = async (): Promise<void> => {
      let wait = this.#stallMs;
      for (;;) {
        await this.#clock.sleep(wait, ctl.signal);
        const idle = this.#clock.monotonic() - last;
        if (idle >= this.#stallMs) {
          onStall();
          return;
        }
        wait = this.#stallMs - idle;
      }
    };
    loop().catch(() => undefined);
    return {
      touch: () => {
        last = this.#clock.monotonic();
      },
      stop: () => {
        ctl.abort();
      },
    };
  }
}

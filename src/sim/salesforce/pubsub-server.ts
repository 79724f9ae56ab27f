// The simulated org's Pub/Sub API: Subscribe with replay presets, a retention window and strict flow
// control (never more events than requested), keepalives when idle, GetSchema, GetTopic, and faults;
// ManagedSubscribe with the replay kept by the org (managed-subscriptions.ts) and commits in-stream.
// One server can serve several orgs: every call is routed to the org that issued its access token.
import {
  Metadata,
  Server,
  ServerCredentials,
  status,
  type ServerDuplexStream,
  type ServerUnaryCall,
  type sendUnaryData,
  type UntypedServiceImplementation,
} from "@grpc/grpc-js";
import {
  pubSubProto,
  replayIdFromSequence,
  type FetchRequest,
  type FetchResponse,
  type ManagedFetchRequest,
  type SchemaInfo,
  type SchemaRequest,
  type TopicInfo,
  type TopicRequest,
} from "../../salesforce/pubsub/proto.ts";
import { grpcError, type GrpcFault } from "./grpc-fault.ts";
import { CORRUPTED_REPLAY_ID_CODE, type SimOrgState } from "./org-state.ts";
import type { TopicLog } from "./topic-log.ts";
import type { SimManagedSubscription } from "./managed-subscriptions.ts";

/** What Salesforce answers a call (or an open stream) whose session is gone. */
const EXPIRED_SESSION: GrpcFault = {
  code: status.UNAUTHENTICATED,
  details: "Invalid or expired access token",
  errorCode: "sfdc.platform.eventbus.grpc.service.auth.error",
};

type SubscribeCall = ServerDuplexStream<FetchRequest, FetchResponse>;
/** A ManagedFetchResponse is a FetchResponse plus commit_response: one stream class writes both. */
type ManagedCall = ServerDuplexStream<ManagedFetchRequest, FetchResponse>;

/** The sim's own trailers for managed subscriptions (Salesforce does not document its codes). */
export const MANAGED_NOT_FOUND_CODE = "sfdc.platform.eventbus.grpc.subscription.managed.not.found";
export const MANAGED_STOPPED_CODE = "sfdc.platform.eventbus.grpc.subscription.managed.state.stop";
export const MANAGED_BUSY_CODE = "sfdc.platform.eventbus.grpc.subscription.managed.already.subscribed";

export interface StreamStats {
  id: number;
  topic: string;
  requested: number;
  sent: number;
  /** Credit the server still owes: requested − sent. Never negative. */
  outstanding: number;
  keepalives: number;
  active: boolean;
  /** The managed subscription a ManagedSubscribe stream holds. */
  managed?: string;
}

class SimStream {
  readonly id: number;
  /** The org whose token opened it: faults aimed at one org touch only its streams. */
  readonly org: SimOrgState;
  readonly topic: TopicLog;
  /** Set on a ManagedSubscribe stream: the subscription it holds. */
  managed: SimManagedSubscription | undefined;
  readonly #call: SubscribeCall | ManagedCall;
  readonly #keepaliveMs: number;
  readonly #maxBatch: number;
  readonly #unsubscribe: () => void;
  readonly #token: string;
  next: number;
  requested = 0;
  sent = 0;
  keepalives = 0;
  stalled = false;
  closed = false;
  #waitingDrain = false;
  #keepaliveTimer: NodeJS.Timeout | undefined;

  constructor(
    id: number,
    org: SimOrgState,
    call: SubscribeCall | ManagedCall,
    topic: TopicLog,
    next: number,
    keepaliveMs: number,
    maxBatch: number,
  ) {
    this.id = id;
    this.org = org;
    this.#call = call;
    this.topic = topic;
    this.next = next;
    this.#keepaliveMs = keepaliveMs;
    this.#maxBatch = maxBatch;
    this.#token = String(call.metadata.get("accesstoken")[0] ?? "");
    this.#unsubscribe = topic.onPublish(() => {
      this.pump();
    });
  }

  get outstanding(): number {
    return this.requested - this.sent;
  }

  request(n: number): void {
    this.requested += n;
    this.pump();
  }

  pump(): void {
    if (this.closed || this.stalled || this.#waitingDrain) return;
    if (this.#sessionTimedOut()) return;
    while (this.outstanding > 0 && this.next <= this.topic.max) {
      const count = Math.min(this.outstanding, this.#maxBatch, this.topic.max - this.next + 1);
      const events = [];
      for (let i = 0; i < count; i++) {
        const seq = this.next + i;
        events.push({
          event: {
            id: `sim-uuid-${seq}`,
            schema_id: this.topic.schema.schemaId,
            payload: this.topic.payload(seq),
            headers: [],
          },
          replay_id: replayIdFromSequence(seq),
        });
      }
      this.next += count;
      this.sent += count;
      this.topic.emitted += count;
      const ok = this.#call.write({
        events,
        latest_replay_id: replayIdFromSequence(this.next - 1),
        rpc_id: `rpc-${this.id}`,
        pending_num_requested: this.outstanding,
      });
      if (!ok) {
        this.#waitingDrain = true;
        this.#call.once("drain", () => {
          this.#waitingDrain = false;
          this.pump();
        });
        return;
      }
    }
    this.#armKeepalive();
  }

  /** Salesforce sends an empty batch with the latest replay id while credit is pending and idle. */
  #armKeepalive(): void {
    clearTimeout(this.#keepaliveTimer);
    if (this.closed || this.stalled || this.outstanding <= 0) return;
    this.#keepaliveTimer = setTimeout(() => {
      if (this.closed || this.stalled || this.outstanding <= 0 || this.#sessionTimedOut()) return;
      this.keepalives++;
      this.#call.write({
        events: [],
        latest_replay_id: replayIdFromSequence(this.next - 1),
        rpc_id: `rpc-${this.id}`,
        pending_num_requested: this.outstanding,
      });
      this.#armKeepalive();
    }, this.#keepaliveMs);
    this.#keepaliveTimer.unref();
  }

  /** The stream's token timed out (or was revoked): it ends UNAUTHENTICATED, as a new call would. */
  #sessionTimedOut(): boolean {
    if (this.org.accepts(this.#token)) return false;
    this.fail(EXPIRED_SESSION);
    return true;
  }

  stall(): void {
    this.stalled = true;
    clearTimeout(this.#keepaliveTimer);
  }

  resume(): void {
    this.stalled = false;
    this.pump();
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    if (this.managed) this.managed.subscribed = false;
    clearTimeout(this.#keepaliveTimer);
    this.#unsubscribe();
  }

  /** Answers a CommitReplayRequest: stored when it names a replay this stream has reached. */
  commit(requestId: string, replayId: Buffer): void {
    const sub = this.managed;
    if (!sub || this.closed) return;
    const seq = replayId.length === 8 ? Number(replayId.readBigUInt64BE()) : -1;
    const refusal =
      sub.commitRefusals.shift() ??
      (seq < this.topic.firstRetained - 1 || seq > this.next - 1
        ? `replay id ${replayId.toString("hex")} was not delivered on this subscription`
        : undefined);
    if (refusal === undefined) {
      sub.committed = seq;
      sub.commits++;
    } else sub.refusedCommits++;
    this.#call.write({
      events: [],
      latest_replay_id: replayIdFromSequence(this.next - 1),
      rpc_id: `rpc-${this.id}`,
      pending_num_requested: this.outstanding,
      commit_response: {
        commit_request_id: requestId,
        replay_id: replayId,
        error: refusal === undefined ? null : { code: "COMMIT", msg: refusal },
        process_time: Date.now(),
      },
    } as FetchResponse);
  }

  fail(fault: GrpcFault): void {
    if (this.closed) return;
    this.close();
    this.#call.emit("error", grpcError(fault));
  }

  end(): void {
    if (this.closed) return;
    this.close();
    this.#call.end();
  }

  stats(): StreamStats {
    return {
      id: this.id,
      topic: this.topic.schema.topic,
      requested: this.requested,
      sent: this.sent,
      outstanding: this.outstanding,
      keepalives: this.keepalives,
      active: !this.closed,
      ...(this.managed ? { managed: this.managed.developerName } : {}),
    };
  }
}

/** Salesforce's refusal of a first request's credit outside 1..100. */
function creditFault(n: number): GrpcFault | undefined {
  if (n >= 1 && n <= 100) return undefined;
  return {
    code: status.INVALID_ARGUMENT,
    details: `num_requested must be 1..100, got ${n}`,
    errorCode: "sfdc.platform.eventbus.grpc.flow.control.invalid.num.requested",
  };
}

export class SimPubSubServer {
  readonly #orgs: readonly SimOrgState[];
  readonly #server: Server;
  readonly #streams: SimStream[] = [];
  #nextId = 1;

  constructor(orgs: readonly SimOrgState[]) {
    this.#orgs = orgs;
    this.#server = new Server({ "grpc.keepalive_permit_without_calls": 1 });
    const impl: UntypedServiceImplementation = {
      Subscribe: (call: SubscribeCall) => {
        this.#subscribe(call);
      },
      ManagedSubscribe: (call: ManagedCall) => {
        this.#managedSubscribe(call);
      },
      GetSchema: (call: ServerUnaryCall<SchemaRequest, SchemaInfo>, cb: sendUnaryData<SchemaInfo>) => {
        this.#getSchema(call, cb);
      },
      GetTopic: (call: ServerUnaryCall<TopicRequest, TopicInfo>, cb: sendUnaryData<TopicInfo>) => {
        this.#getTopic(call, cb);
      },
    };
    this.#server.addService(pubSubProto().service, impl);
  }

  async listen(tls?: { certPem: string; keyPem: string }): Promise<number> {
    const creds = tls
      ? ServerCredentials.createSsl(null, [
          { cert_chain: Buffer.from(tls.certPem), private_key: Buffer.from(tls.keyPem) },
        ])
      : ServerCredentials.createInsecure();
    return new Promise((resolve, reject) => {
      this.#server.bindAsync("127.0.0.1:0", creds, (err, port) => {
        if (err) reject(err);
        else resolve(port);
      });
    });
  }

  stop(): void {
    for (const s of this.#streams) s.close();
    this.#server.forceShutdown();
  }

  /**
   * The org a call is for: the one that issued its token. A token nobody issued still lands on the
   * only org of a single-org sim, so that org counts the call (its stats predate multi-org).
   */
  #orgOf(md: Metadata): SimOrgState | undefined {
    const token = md.get("accesstoken")[0];
    const issuer = typeof token === "string" ? this.#orgs.find((o) => o.validTokens.has(token)) : undefined;
    return issuer ?? (this.#orgs.length === 1 ? this.#orgs[0] : undefined);
  }

  /** The metadata check every RPC does: a live token, its org's instance URL and tenant id. */
  #authFault(md: Metadata, org: SimOrgState | undefined): GrpcFault | undefined {
    const token = md.get("accesstoken")[0];
    if (!org || typeof token !== "string" || !org.accepts(token)) return EXPIRED_SESSION;
    // Compared without the scheme: clients that insist on https:// (the bench's reference) still match.
    const instance = String(md.get("instanceurl")[0] ?? "").replace(/^https?:\/\//, "");
    if (instance !== org.instanceUrl.replace(/^https?:\/\//, "") || md.get("tenantid")[0] !== org.orgId) {
      return {
        code: status.UNAUTHENTICATED,
        details: "instanceurl or tenantid does not match the token",
        errorCode: "sfdc.platform.eventbus.grpc.service.auth.error",
      };
    }
    return undefined;
  }

  #subscribe(call: SubscribeCall): void {
    this.#serve<FetchRequest>(
      call,
      (org) => org.subscribeCalls++,
      (org, req) => this.#open(org, call, req),
      (stream, req) => {
        stream.request(req.num_requested ?? 0);
      },
    );
  }

  /**
   * One bidi call: the metadata checked (and a queued fault taken) at once, the stream opened by the
   * first request, each request (the first included) handed to `onRequest`, and closed with the call.
   */
  #serve<Req>(
    call: ServerDuplexStream<Req, FetchResponse>,
    count: (org: SimOrgState) => void,
    open: (org: SimOrgState, req: Req) => SimStream | GrpcFault,
    onRequest: (stream: SimStream, req: Req) => void,
  ): void {
    const org = this.#orgOf(call.metadata);
    if (org) count(org);
    const early = this.#authFault(call.metadata, org) ?? org?.subscribeFaults.shift();
    if (early || !org) {
      call.emit("error", grpcError(early ?? { code: status.UNAUTHENTICATED, details: "no org" }));
      return;
    }
    let stream: SimStream | undefined;
    call.on("data", (req: Req) => {
      if (!stream) {
        const opened = open(org, req);
        if ("code" in opened) {
          call.emit("error", grpcError(opened));
          return;
        }
        stream = opened;
      }
      onRequest(stream, req);
    });
    call.on("end", () => {
      stream?.end();
    });
    call.on("cancelled", () => {
      stream?.close();
    });
    call.on("error", () => {
      stream?.close();
    });
  }

  #open(org: SimOrgState, call: SubscribeCall, req: FetchRequest): SimStream | GrpcFault {
    const topic = org.topics.get(req.topic_name ?? "");
    if (!topic)
      return {
        code: status.NOT_FOUND,
        details: `Topic ${req.topic_name ?? ""} not found`,
        errorCode: "sfdc.platform.eventbus.grpc.subscription.topic.not.found",
      };
    const badCredit = creditFault(req.num_requested ?? 0);
    if (badCredit) return badCredit;
    let next: number;
    const preset = req.replay_preset ?? "LATEST";
    if (preset === "EARLIEST") next = topic.firstRetained;
    else if (preset === "CUSTOM") {
      const rejection = org.customRejection;
      org.customRejection = undefined;
      if (rejection) return rejection;
      const id = req.replay_id ?? Buffer.alloc(0);
      const seq = id.length === 8 ? Number(id.readBigUInt64BE()) : -1;
      if (seq < topic.firstRetained - 1 || seq > topic.max) {
        return {
          code: status.INVALID_ARGUMENT,
          details: "The Replay ID validation failed. Ensure that the Replay ID is valid.",
          errorCode: CORRUPTED_REPLAY_ID_CODE,
        };
      }
      next = seq + 1;
    } else next = topic.max + 1;
    const stream = this.#newStream(org, call, topic, next);
    this.#streams.push(stream);
    return stream;
  }

  #managedSubscribe(call: ManagedCall): void {
    this.#serve<ManagedFetchRequest>(
      call,
      (org) => org.managedSubscribeCalls++,
      (org, req) => this.#openManaged(org, call, req),
      (stream, req) => {
        const commit = req.commit_replay_id_request;
        if (commit?.replay_id && commit.replay_id.length > 0)
          stream.commit(commit.commit_request_id, commit.replay_id);
        if ((req.num_requested ?? 0) > 0) stream.request(req.num_requested ?? 0);
      },
    );
  }

  #openManaged(org: SimOrgState, call: ManagedCall, req: ManagedFetchRequest): SimStream | GrpcFault {
    const named = req.subscription_id || req.developer_name || "";
    const sub = org.managed.find({ id: req.subscription_id ?? "", name: req.developer_name ?? "" });
    if (!sub)
      return {
        code: status.NOT_FOUND,
        details: `Managed subscription ${named || "(none named)"} not found`,
        errorCode: MANAGED_NOT_FOUND_CODE,
      };
    if (sub.state !== "RUN")
      return {
        code: status.FAILED_PRECONDITION,
        details: `Managed subscription ${sub.developerName} is in state ${sub.state}`,
        errorCode: MANAGED_STOPPED_CODE,
      };
    if (sub.subscribed)
      return {
        code: status.FAILED_PRECONDITION,
        details: `Managed subscription ${sub.developerName} already has an active subscriber`,
        errorCode: MANAGED_BUSY_CODE,
      };
    const topic = org.topics.get(sub.topic);
    if (!topic)
      return {
        code: status.NOT_FOUND,
        details: `Topic ${sub.topic} not found`,
        errorCode: "sfdc.platform.eventbus.grpc.subscription.topic.not.found",
      };
    const badCredit = creditFault(req.num_requested ?? 0);
    if (badCredit) return badCredit;
    const startAt = (preset: "LATEST" | "EARLIEST"): number =>
      preset === "EARLIEST" ? topic.firstRetained : topic.max + 1;
    let next: number;
    if (sub.committed === undefined) next = startAt(sub.defaultReplay);
    else if (sub.committed < topic.firstRetained - 1) next = startAt(sub.errorRecoveryReplay);
    else next = sub.committed + 1;
    const stream = this.#newStream(org, call, topic, next);
    stream.managed = sub;
    sub.subscribed = true;
    this.#streams.push(stream);
    return stream;
  }

  #newStream(org: SimOrgState, call: SubscribeCall | ManagedCall, topic: TopicLog, next: number): SimStream {
    return new SimStream(
      this.#nextId++,
      org,
      call,
      topic,
      next,
      org.opts.keepaliveMs ?? 270_000,
      org.opts.maxBatch ?? 100,
    );
  }

  /** The stream holding `sub`, if one does. */
  #holding(org: SimOrgState, sub: SimManagedSubscription): SimStream | undefined {
    return this.#active(org).find((s) => s.managed === sub);
  }

  /** The subscriber of a deleted subscription ends NOT_FOUND. */
  deletedManaged(org: SimOrgState, sub: SimManagedSubscription): void {
    this.#holding(org, sub)?.fail({
      code: status.NOT_FOUND,
      details: `Managed subscription ${sub.developerName} was deleted`,
      errorCode: MANAGED_NOT_FOUND_CODE,
    });
  }

  /** RUN -> STOP disconnects the subscriber. */
  stoppedManaged(org: SimOrgState, sub: SimManagedSubscription): void {
    this.#holding(org, sub)?.fail({
      code: status.FAILED_PRECONDITION,
      details: `Managed subscription ${sub.developerName} is in state STOP`,
      errorCode: MANAGED_STOPPED_CODE,
    });
  }

  #getSchema(call: ServerUnaryCall<SchemaRequest, SchemaInfo>, cb: sendUnaryData<SchemaInfo>): void {
    const org = this.#orgOf(call.metadata);
    if (org) org.schemaCalls++;
    const fault = this.#authFault(call.metadata, org) ?? org?.schemaFaults.shift();
    if (fault || !org) {
      cb(grpcError(fault ?? { code: status.UNAUTHENTICATED, details: "no org" }));
      return;
    }
    for (const topic of org.topics.values()) {
      if (topic.schema.schemaId === call.request.schema_id) {
        cb(null, {
          schema_json: topic.schema.schemaJson,
          schema_id: topic.schema.schemaId,
          rpc_id: "rpc-schema",
        });
        return;
      }
    }
    cb(grpcError({ code: status.NOT_FOUND, details: `schema ${call.request.schema_id} not found` }));
  }

  #getTopic(call: ServerUnaryCall<TopicRequest, TopicInfo>, cb: sendUnaryData<TopicInfo>): void {
    const org = this.#orgOf(call.metadata);
    const fault = this.#authFault(call.metadata, org);
    if (fault || !org) {
      cb(grpcError(fault ?? { code: status.UNAUTHENTICATED, details: "no org" }));
      return;
    }
    const topic = org.topics.get(call.request.topic_name);
    if (!topic) {
      cb(grpcError({ code: status.NOT_FOUND, details: `Topic ${call.request.topic_name} not found` }));
      return;
    }
    cb(null, {
      topic_name: call.request.topic_name,
      tenant_guid: org.orgId,
      can_publish: true,
      can_subscribe: true,
      schema_id: topic.schema.schemaId,
      rpc_id: "rpc-topic",
    });
  }

  #active(org: SimOrgState, topic?: string): SimStream[] {
    return this.#streams.filter(
      (s) => s.org === org && !s.closed && (topic === undefined || s.topic.schema.topic === topic),
    );
  }

  // Faults, each aimed at one org -------------------------------------------------------------------

  endStreams(org: SimOrgState, topic?: string): number {
    const hit = this.#active(org, topic);
    for (const s of hit) s.end();
    return hit.length;
  }

  failStreams(org: SimOrgState, fault: GrpcFault, topic?: string): number {
    const hit = this.#active(org, topic);
    for (const s of hit) s.fail(fault);
    return hit.length;
  }

  stallStreams(org: SimOrgState, topic?: string): void {
    for (const s of this.#active(org, topic)) s.stall();
  }

  resumeStreams(org: SimOrgState): void {
    for (const s of this.#active(org)) s.resume();
  }

  streamStats(org: SimOrgState): StreamStats[] {
    return this.#streams.filter((s) => s.org === org).map((s) => s.stats());
  }
}

// A whole simulated Salesforce org on loopback: HTTP (OAuth, userinfo, and the REST API: describeGlobal,
// SOQL, EventLogFile blobs, ApexLog bodies, limits) and the Pub/Sub gRPC API, with a faults API for
// tests and deterministic events for demos and benches.
import type { AddressInfo } from "node:net";
import { status } from "@grpc/grpc-js";
import { addPollingData } from "../salesforce-rest/generate.ts";
import { createSimRest, type SimRestHandler } from "../salesforce-rest/handler.ts";
import { shortNameOf } from "./events.ts";
import { createSimHttpServer } from "./http-server.ts";
import { CORRUPTED_REPLAY_ID_CODE, SimOrgState, type SimOrgOptions, type TokenClaims } from "./org-state.ts";
import { TcpRelay } from "./tcp-relay.ts";
import { SimPubSubServer, type GrpcFault, type StreamStats } from "./pubsub-server.ts";

export type { SimOrgOptions, TokenClaims, StreamStats, GrpcFault };
export { CORRUPTED_REPLAY_ID_CODE };

export interface SimTopicStats {
  /** Events handed to subscribers (all streams). */
  emitted: number;
  /** Highest published replay id, as its sequence number. */
  maxReplayId: number;
  firstRetained: number;
}

export interface SimOrgStats {
  topics: Record<string, SimTopicStats>;
  streams: StreamStats[];
  tokenRequests: number;
  mints: number;
  userinfoCalls: number;
  describeCalls: number;
  subscribeCalls: number;
  schemaCalls: number;
  lastClaims: TokenClaims | undefined;
}

export interface SimOrgFaults {
  /** TCP-reset every client connection to the Pub/Sub endpoint (a dropped LB/NAT connection). */
  resetConnections(): number;
  /** End active streams cleanly (status OK), as Salesforce does on session rotation. */
  endStreams(topic?: string): number;
  /** Terminate active streams with a gRPC status, e.g. UNAVAILABLE. */
  failStreams(fault: GrpcFault, topic?: string): number;
  /** The next `count` Subscribe calls fail at once with this status (default UNAVAILABLE). */
  failNextSubscribes(count: number, fault?: GrpcFault): void;
  failNextSchemas(count: number, fault?: GrpcFault): void;
  /** Every issued token stops working; active streams end UNAUTHENTICATED until a re-mint. */
  expireTokens(): void;
  /** The next CUSTOM subscribe fails INVALID_ARGUMENT; errorCode defaults to the corrupted code, null = no trailer. */
  rejectNextCustom(errorCode?: string | null): void;
  /** Active streams go silent: no events, no keepalives (a half-open connection). */
  stallStreams(topic?: string): void;
  resumeStreams(): void;
  /** The next `count` responses on an HTTP path are this status and body. */
  failHttp(path: string, count: number, statusCode: number, body?: string): void;
  /** Appends `count` new events to a topic and wakes its subscribers. */
  publish(topic: string, count: number): void;
  /** Events with these sequence numbers carry an undecodable payload. */
  poisonEvents(topic: string, seqs: readonly number[]): void;
  /** A new topic appears (describeGlobal lists it from now on). */
  addTopic(topic: string, events: number): void;
}

export interface SimOrg {
  loginUrl: string;
  instanceUrl: string;
  /** `127.0.0.1:<port>`, plaintext unless started with `tls`. */
  pubsubEndpoint: string;
  orgId: string;
  clientId: string;
  faults: SimOrgFaults;
  /** The REST side: its data (mutable between runs), wire faults and request stats. */
  rest: SimRestHandler;
  stats(): SimOrgStats;
  stop(): Promise<void>;
}

export async function startSimOrg(opts: SimOrgOptions): Promise<SimOrg> {
  const state = new SimOrgState(opts);
  const rest = createSimRest({
    ...opts.rest,
    seed: opts.seed ?? 1,
    sobjects: opts.rest?.sobjects ?? ["Account", "Contact", "LoginHistory", ...(opts.extraSObjects ?? [])],
    moreSObjects: () => topicSObjects(state),
    validToken: (token) => state.validTokens.has(token),
  });
  if (opts.polling) addPollingData(rest.data, opts.polling, opts.rest?.clock?.now() ?? Date.now());
  const http = createSimHttpServer(state, rest);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => {
      resolve();
    });
  });
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  state.loginUrl = base;
  state.instanceUrl = base;
  const grpc = new SimPubSubServer(state);
  const relay = new TcpRelay(await grpc.listen(opts.tls));
  const port = await relay.listen();

  const faults: SimOrgFaults = {
    resetConnections: () => relay.resetAll(),
    endStreams: (topic) => grpc.endStreams(topic),
    failStreams: (fault, topic) => grpc.failStreams(fault, topic),
    failNextSubscribes: (
      count,
      fault = { code: status.UNAVAILABLE, details: "Service unavailable (simulated)" },
    ) => {
      grpc.failNextSubscribes(count, fault);
    },
    failNextSchemas: (
      count,
      fault = { code: status.UNAVAILABLE, details: "Schema service unavailable (simulated)" },
    ) => {
      grpc.failNextSchemas(count, fault);
    },
    expireTokens: () => {
      state.validTokens.clear();
      grpc.failStreams({
        code: status.UNAUTHENTICATED,
        details: "Session expired or invalid",
        errorCode: "sfdc.platform.eventbus.grpc.service.auth.error",
      });
    },
    rejectNextCustom: (errorCode) => {
      const fault: GrpcFault = { code: status.INVALID_ARGUMENT, details: "The Replay ID validation failed." };
      if (errorCode !== null) fault.errorCode = errorCode ?? CORRUPTED_REPLAY_ID_CODE;
      grpc.rejectNextCustom(fault);
    },
    stallStreams: (topic) => {
      grpc.stallStreams(topic);
    },
    resumeStreams: () => {
      grpc.resumeStreams();
    },
    failHttp: (path, count, statusCode, body = '{"error":"server_error"}') => {
      const queue = state.httpFaults.get(path) ?? [];
      for (let i = 0; i < count; i++) queue.push({ status: statusCode, body });
      state.httpFaults.set(path, queue);
    },
    publish: (topic, count) => {
      state.topic(topic).publish(count);
    },
    poisonEvents: (topic, seqs) => {
      const log = state.topic(topic);
      for (const seq of seqs) log.poisoned.add(seq);
    },
    addTopic: (topic, events) => {
      state.addTopic(topic, events);
    },
  };

  return {
    loginUrl: base,
    instanceUrl: base,
    pubsubEndpoint: `127.0.0.1:${port}`,
    orgId: state.orgId,
    clientId: state.clientId,
    faults,
    rest,
    stats: () => ({
      topics: Object.fromEntries(
        [...state.topics].map(([name, log]) => [
          name,
          { emitted: log.emitted, maxReplayId: log.max, firstRetained: log.firstRetained },
        ]),
      ),
      streams: grpc.streamStats(),
      tokenRequests: state.tokenRequests,
      mints: state.mints,
      userinfoCalls: state.userinfoCalls,
      describeCalls: state.describeCalls,
      subscribeCalls: grpc.subscribeCalls,
      schemaCalls: grpc.schemaCalls,
      lastClaims: state.lastClaims,
    }),
    stop: async () => {
      grpc.stop();
      await relay.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) =>
        http.close(() => {
          resolve();
        }),
      );
    },
  };
}

/** Topic names as describeGlobal lists them: `<X>Event` topics come with their `<X>EventStore` twin. */
function topicSObjects(state: SimOrgState): string[] {
  const names: string[] = [];
  for (const topic of state.topics.keys()) {
    const name = shortNameOf(topic);
    names.push(name);
    if (topic.startsWith("/event/") && name.endsWith("Event")) names.push(`${name}Store`);
  }
  return names;
}

// A whole simulated Salesforce org on loopback: HTTP (OAuth, userinfo, and the REST API: describeGlobal,
// SOQL, EventLogFile blobs, ApexLog bodies, limits) and the Pub/Sub gRPC API, with a faults API for
// tests and deterministic events for demos and benches. `startSimOrgs` serves several orgs from one
// HTTP and one gRPC port, as one Salesforce instance does: each has its own client, tokens and data.
import type { AddressInfo } from "node:net";
import { status } from "@grpc/grpc-js";
import { addPollingData } from "../salesforce-rest/generate.ts";
import { createSimRest, type SimRestHandler } from "../salesforce-rest/handler.ts";
import { shortNameOf } from "./events.ts";
import { createSimHttpServer, type SimHttpOrg } from "./http-server.ts";
import { CORRUPTED_REPLAY_ID_CODE, SimOrgState, type SimOrgOptions, type TokenClaims } from "./org-state.ts";
import { TcpRelay } from "./tcp-relay.ts";
import type { GrpcFault } from "./grpc-fault.ts";
import { SimPubSubServer, type StreamStats } from "./pubsub-server.ts";
import type { ManagedState, SimManagedSubscriptionSpec } from "./managed-subscriptions.ts";

export type { SimOrgOptions, TokenClaims, StreamStats, GrpcFault, SimManagedSubscriptionSpec };
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
  managedSubscribeCalls: number;
  schemaCalls: number;
  lastClaims: TokenClaims | undefined;
  managed: SimManagedStats[];
}

/** One managed subscription as the org holds it. */
export interface SimManagedStats {
  id: string;
  developerName: string;
  topic: string;
  state: ManagedState;
  /** Sequence number of the committed replay id; undefined: none. */
  committed: number | undefined;
  commits: number;
  refusedCommits: number;
  subscribed: boolean;
}

export interface SimOrgFaults {
  /**
   * TCP-reset every client connection to the Pub/Sub endpoint (a dropped LB/NAT connection). The
   * endpoint is shared by every org of a multi-org sim, so this cuts all of them.
   */
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
  /** Creates a ManagedEventSubscription (as Setup, Metadata or Tooling API would); returns its id. */
  createManagedSubscription(spec: SimManagedSubscriptionSpec): string;
  /** Deletes it (by id or developer name): its subscriber ends NOT_FOUND, and so does every next call. */
  deleteManagedSubscription(ref: string): void;
  /** RUN <-> STOP; STOP disconnects the subscriber and deletes the committed replay. */
  setManagedSubscriptionState(ref: string, state: ManagedState): void;
  /** The next `count` commits on it are answered with a CommitReplayResponse error (code COMMIT). */
  refuseNextCommits(ref: string, count: number, msg?: string): void;
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
  /** Stops the sim; in a multi-org sim, every org (they share the ports). Safe to call twice. */
  stop(): Promise<void>;
}

/** One org of a multi-org sim: its options and the name the daemon's `orgs[].name` will use. */
export interface SimOrgEntry extends SimOrgOptions {
  name: string;
}

export interface SimOrgsOptions {
  orgs: readonly SimOrgEntry[];
  /** Serve the shared gRPC port over TLS with this certificate instead of plaintext. */
  tls?: { certPem: string; keyPem: string };
}

/** Several orgs on one HTTP and one gRPC port; each entry's `orgs[i]` is named `name`. */
export interface SimOrgs {
  loginUrl: string;
  pubsubEndpoint: string;
  orgs: (SimOrg & { name: string })[];
  /** The org named `name`; throws when there is none. */
  org(name: string): SimOrg & { name: string };
  stop(): Promise<void>;
}

export async function startSimOrg(opts: SimOrgOptions): Promise<SimOrg> {
  const { tls, ...rest } = opts;
  const sims = await startSimOrgs({ orgs: [{ ...rest, name: "" }], ...(tls ? { tls } : {}) });
  const { name: _name, ...org } = sims.orgs[0]!;
  return org;
}

/**
 * Starts `opts.orgs` behind one HTTP and one gRPC port. Unless an entry says otherwise, org `i` gets
 * its own org id (`00DSIM…<i+1>AA`), client id (`3MVG9sim.client.id` for the first, `….<i+1>` after),
 * seed (`i + 1`) and, when there are several orgs, EventIdentifier prefix (`sim-<name>`), so no two
 * orgs ever serve the same event id.
 */
export async function startSimOrgs(opts: SimOrgsOptions): Promise<SimOrgs> {
  const names = opts.orgs.map((o) => o.name);
  const dupes = names.filter((n, i) => names.indexOf(n) !== i);
  if (dupes.length > 0) throw new Error(`sim: duplicate org name(s) ${dupes.join(", ")}`);
  const multi = opts.orgs.length > 1;
  const members: (SimHttpOrg & { entry: SimOrgEntry })[] = opts.orgs.map((entry, i) => {
    const withDefaults: SimOrgOptions = {
      ...entry,
      orgId: entry.orgId ?? `00DSIM${String(i + 1).padStart(10, "0")}AA`,
      clientId: entry.clientId ?? (i === 0 ? "3MVG9sim.client.id" : `3MVG9sim.client.id.${i + 1}`),
      seed: entry.seed ?? i + 1,
      ...(multi && entry.eventIdPrefix === undefined ? { eventIdPrefix: `sim-${entry.name}` } : {}),
    };
    const state = new SimOrgState(withDefaults);
    const rest = createSimRest({
      ...entry.rest,
      seed: withDefaults.seed ?? 1,
      sobjects: entry.rest?.sobjects ?? [
        "Account",
        "Contact",
        "LoginHistory",
        ...(entry.extraSObjects ?? []),
      ],
      moreSObjects: () => topicSObjects(state),
      validToken: (token) => state.accepts(token),
    });
    if (entry.polling) addPollingData(rest.data, entry.polling, entry.rest?.clock?.now() ?? Date.now());
    // The Tooling API lists the very records ManagedSubscribe serves.
    rest.data.managedEventSubscriptions = state.managed.records;
    return { entry, state, rest };
  });
  const http = createSimHttpServer(members);
  await new Promise<void>((resolve, reject) => {
    http.once("error", reject);
    http.listen(0, "127.0.0.1", () => {
      resolve();
    });
  });
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const grpc = new SimPubSubServer(members.map((m) => m.state));
  const relay = new TcpRelay(await grpc.listen(opts.tls));
  const port = await relay.listen();
  const pubsubEndpoint = `127.0.0.1:${port}`;

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> =>
    (stopped ??= (async () => {
      grpc.stop();
      await relay.close();
      http.closeAllConnections();
      await new Promise<void>((resolve) =>
        http.close(() => {
          resolve();
        }),
      );
    })());

  const orgs = members.map(({ entry, state, rest }) => {
    state.loginUrl = base;
    state.instanceUrl = base;
    return { ...simOrg(state, rest, grpc, relay, base, pubsubEndpoint, stop), name: entry.name };
  });
  return {
    loginUrl: base,
    pubsubEndpoint,
    orgs,
    org: (name) => {
      const found = orgs.find((o) => o.name === name);
      if (!found) throw new Error(`sim: no org named ${name}; orgs: ${names.join(", ")}`);
      return found;
    },
    stop,
  };
}

/** One org's face: its identity, its faults (aimed at its own streams and data), its stats. */
function simOrg(
  state: SimOrgState,
  rest: SimRestHandler,
  grpc: SimPubSubServer,
  relay: TcpRelay,
  base: string,
  pubsubEndpoint: string,
  stop: () => Promise<void>,
): SimOrg {
  const faults: SimOrgFaults = {
    resetConnections: () => relay.resetAll(),
    endStreams: (topic) => grpc.endStreams(state, topic),
    failStreams: (fault, topic) => grpc.failStreams(state, fault, topic),
    failNextSubscribes: (
      count,
      fault = { code: status.UNAVAILABLE, details: "Service unavailable (simulated)" },
    ) => {
      for (let i = 0; i < count; i++) state.subscribeFaults.push(fault);
    },
    failNextSchemas: (
      count,
      fault = { code: status.UNAVAILABLE, details: "Schema service unavailable (simulated)" },
    ) => {
      for (let i = 0; i < count; i++) state.schemaFaults.push(fault);
    },
    expireTokens: () => {
      state.revokeTokens();
      grpc.failStreams(state, {
        code: status.UNAUTHENTICATED,
        details: "Session expired or invalid",
        errorCode: "sfdc.platform.eventbus.grpc.service.auth.error",
      });
    },
    rejectNextCustom: (errorCode) => {
      const fault: GrpcFault = { code: status.INVALID_ARGUMENT, details: "The Replay ID validation failed." };
      if (errorCode !== null) fault.errorCode = errorCode ?? CORRUPTED_REPLAY_ID_CODE;
      state.customRejection = fault;
    },
    stallStreams: (topic) => {
      grpc.stallStreams(state, topic);
    },
    resumeStreams: () => {
      grpc.resumeStreams(state);
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
    createManagedSubscription: (spec) => state.managed.create(spec).id,
    deleteManagedSubscription: (ref) => {
      grpc.deletedManaged(state, state.managed.delete(ref));
    },
    setManagedSubscriptionState: (ref, next) => {
      const sub = state.managed.get(ref);
      const was = sub.state;
      sub.state = next;
      if (was === "RUN" && next === "STOP") grpc.stoppedManaged(state, sub);
    },
    refuseNextCommits: (ref, count, msg = "commit failed (simulated)") => {
      const sub = state.managed.get(ref);
      for (let i = 0; i < count; i++) sub.commitRefusals.push(msg);
    },
  };

  return {
    loginUrl: base,
    instanceUrl: base,
    pubsubEndpoint,
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
      streams: grpc.streamStats(state),
      tokenRequests: state.tokenRequests,
      mints: state.mints,
      userinfoCalls: state.userinfoCalls,
      describeCalls: state.describeCalls,
      subscribeCalls: state.subscribeCalls,
      managedSubscribeCalls: state.managedSubscribeCalls,
      schemaCalls: state.schemaCalls,
      lastClaims: state.lastClaims,
      managed: state.managed.all().map((s) => ({
        id: s.id,
        developerName: s.developerName,
        topic: s.topic,
        state: s.state,
        committed: s.committed,
        commits: s.commits,
        refusedCommits: s.refusedCommits,
        subscribed: s.subscribed,
      })),
    }),
    stop,
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

// Salesforce's published pubsub_api.proto, loaded field-for-field (snake_case kept) and shared by
// the client and the simulated org, so both speak exactly the wire Salesforce documents.
import { fileURLToPath } from "node:url";
import { loadSync } from "@grpc/proto-loader";
import type { MethodDefinition, ServiceDefinition } from "@grpc/grpc-js";

export type ReplayPresetName = "LATEST" | "EARLIEST" | "CUSTOM";

export interface FetchRequest {
  topic_name?: string;
  replay_preset?: ReplayPresetName;
  replay_id?: Buffer;
  num_requested?: number;
  auth_refresh?: string;
}

export interface EventHeader {
  key: string;
  value: Buffer;
}

export interface ProducerEvent {
  id: string;
  schema_id: string;
  payload: Buffer;
  headers: EventHeader[];
}

export interface ConsumerEvent {
  event: ProducerEvent | null;
  replay_id: Buffer;
}

export interface FetchResponse {
  events: ConsumerEvent[];
  latest_replay_id: Buffer;
  rpc_id: string;
  pending_num_requested: number;
}

/** ManagedSubscribe (beta): the subscription names its topic and keeps the replay on Salesforce's side. */
export interface CommitReplayRequest {
  commit_request_id: string;
  replay_id: Buffer;
}

export interface ManagedFetchRequest {
  /** The ManagedEventSubscription's Tooling API id, or its developer name: first request only. */
  subscription_id?: string;
  developer_name?: string;
  num_requested?: number;
  auth_refresh?: string;
  commit_replay_id_request?: CommitReplayRequest | null;
}

/** `Error` of the proto: code UNKNOWN, PUBLISH or COMMIT (unrecoverable commit errors). */
export interface PubSubError {
  code: "UNKNOWN" | "PUBLISH" | "COMMIT";
  msg: string;
}

export interface CommitReplayResponse {
  commit_request_id: string;
  replay_id: Buffer;
  error: PubSubError | null;
  /** When the server received the request, epoch ms (int64: a string from the loader). */
  process_time: string | number;
}

export interface ManagedFetchResponse extends FetchResponse {
  commit_response: CommitReplayResponse | null;
}

export interface SchemaRequest {
  schema_id: string;
}

export interface SchemaInfo {
  schema_json: string;
  schema_id: string;
  rpc_id: string;
}

export interface TopicRequest {
  topic_name: string;
}

export interface TopicInfo {
  topic_name: string;
  tenant_guid: string;
  can_publish: boolean;
  can_subscribe: boolean;
  schema_id: string;
  rpc_id: string;
}

export interface PubSubProto {
  service: ServiceDefinition;
  subscribe: MethodDefinition<FetchRequest, FetchResponse>;
  managedSubscribe: MethodDefinition<ManagedFetchRequest, ManagedFetchResponse>;
  getSchema: MethodDefinition<SchemaRequest, SchemaInfo>;
  getTopic: MethodDefinition<TopicRequest, TopicInfo>;
}

const PROTO_PATH = fileURLToPath(new URL("../../../proto/pubsub_api.proto", import.meta.url));

let loaded: PubSubProto | undefined;

export function pubSubProto(): PubSubProto {
  if (loaded) return loaded;
  const pkg = loadSync(PROTO_PATH, { keepCase: true, enums: String, defaults: true, oneofs: true });
  const service = pkg["eventbus.v1.PubSub"] as ServiceDefinition;
  loaded = {
    service,
    subscribe: service.Subscribe as MethodDefinition<FetchRequest, FetchResponse>,
    managedSubscribe: service.ManagedSubscribe as MethodDefinition<ManagedFetchRequest, ManagedFetchResponse>,
    getSchema: service.GetSchema as MethodDefinition<SchemaRequest, SchemaInfo>,
    getTopic: service.GetTopic as MethodDefinition<TopicRequest, TopicInfo>,
  };
  return loaded;
}

/** Replay ids in this codebase are the raw bytes Salesforce sent; the sim uses 8-byte big-endian. */
export function replayIdFromSequence(seq: number): Buffer {
  const buf = Buffer.allocUnsafe(8);
  buf.writeBigUInt64BE(BigInt(seq));
  return buf;
}

// Deterministic Real-Time Event Monitoring traffic: with seed S, topic T's n-th event is always the
// same record (EventIdentifier `<prefix>-<T's last segment>-<n>`, prefix `sim` unless the org has its
// own), Avro-encoded with a per-topic schema.
import { createHash } from "node:crypto";
import avsc from "avsc";
import { seededRandom } from "../../util/prng.ts";
import { simUserId, simUsername } from "../salesforce-rest/users.ts";
import { THREAT_EVENTS, THREAT_FIELDS, threatValues } from "./threat-detection.ts";

type AvroField = { name: string; type: unknown; default?: unknown };

export interface SimTopicSchema {
  topic: string;
  /** Last path segment: `/event/LoginEventStream` → `LoginEventStream`. */
  shortName: string;
  schemaId: string;
  schemaJson: string;
  type: avsc.Type;
}

/** Backlog events are one second apart, unless that would date the oldest one past this span. */
const BACKLOG_SPACING_MS = 1000;
/**
 * Loki refuses samples older than `reject_old_samples_max_age` (default 7 days), so the oldest
 * backlog event stays inside 6 days however large the backlog (#10 item 8).
 */
export const MAX_BACKLOG_SPAN_MS = 6 * 24 * 3_600_000;

/**
 * When backlog event `n` (1-based) of `backlog` happened: counted backwards from `startMs`, so the
 * newest is the sim's start and none is in the future. The offsets depend only on (backlog, n), so
 * the same org instance always serves the same bytes.
 */
export function backlogEventMs(startMs: number, backlog: number, n: number): number {
  const spacing = backlog <= 1 ? 0 : Math.min(BACKLOG_SPACING_MS, Math.floor(MAX_BACKLOG_SPAN_MS / backlog));
  return startMs - (backlog - n) * spacing;
}

const nullable = (type: unknown): AvroField["type"] => ["null", type];
const tsMillis = { type: "long", logicalType: "timestamp-millis" };
const field = (name: string, type: unknown): AvroField => ({ name, type: nullable(type), default: null });

const COMMON: AvroField[] = [
  { name: "EventIdentifier", type: "string" },
  field("EventDate", tsMillis),
  field("CreatedDate", tsMillis),
  field("UserId", "string"),
  field("Username", "string"),
  field("SessionKey", "string"),
  field("LoginKey", "string"),
  field("SourceIp", "string"),
];

const FIELDS: Record<string, AvroField[]> = {
  LoginEventStream: [
    ...COMMON,
    field("LoginType", "string"),
    field("Status", "string"),
    field("Application", "string"),
    field("Browser", "string"),
    field("Platform", "string"),
    field("LoginUrl", "string"),
    field("CountryIso", "string"),
    field("City", "string"),
    field("TlsProtocol", "string"),
    field("CipherSuite", "string"),
    field("AuthMethodReference", "string"),
    field("LoginHistoryId", "string"),
    field("PolicyOutcome", "string"),
    field("EvaluationTime", "double"),
    field("AdditionalInfo", "string"),
  ],
  ApiEventStream: [
    ...COMMON,
    field("Application", "string"),
    field("Client", "string"),
    field("ApiType", "string"),
    field("ApiVersion", "double"),
    field("Operation", "string"),
    field("Platform", "string"),
    field("QueriedEntities", "string"),
    field("Query", "string"),
    field("Records", "string"),
    field("RowsProcessed", "double"),
    field("RowsReturned", "long"),
    field("ElapsedTime", "long"),
    field("SessionLevel", "string"),
    field("UserAgent", "string"),
    field("PolicyOutcome", "string"),
  ],
  LightningUriEventStream: [
    ...COMMON,
    field("Operation", "string"),
    field("PageUrl", "string"),
    field("PreviousPageUrl", "string"),
    field("RecordId", "string"),
    field("QueriedEntities", "string"),
    field("Duration", "double"),
    field("EffectivePageTime", "long"),
    field("DeviceSessionId", "string"),
    field("AppName", "string"),
    field("ConnectionType", "string"),
    field("Browser", "string"),
    field("OsName", "string"),
    field("UserType", "string"),
  ],
  ...Object.fromEntries(
    THREAT_EVENTS.map((e) => [e, [...COMMON, ...THREAT_FIELDS[e].map(([name, type]) => field(name, type))]]),
  ),
};

const GENERIC: AvroField[] = [
  ...COMMON,
  field("CreatedById", "string"),
  field("Score", "double"),
  field("Summary", "string"),
  field("Operation", "string"),
];

const CHANGE_EVENT_HEADER = {
  type: "record",
  name: "ChangeEventHeader",
  fields: [
    { name: "entityName", type: "string" },
    { name: "recordIds", type: { type: "array", items: "string" } },
    { name: "changeType", type: "string" },
    { name: "changeOrigin", type: "string" },
    { name: "transactionKey", type: "string" },
    { name: "sequenceNumber", type: "int" },
    { name: "commitTimestamp", type: "long" },
    { name: "commitNumber", type: "long" },
    { name: "commitUser", type: "string" },
    { name: "nulledFields", type: { type: "array", items: "string" } },
    { name: "diffFields", type: { type: "array", items: "string" } },
    { name: "changedFields", type: { type: "array", items: "string" } },
  ],
};

const CDC: AvroField[] = [
  { name: "ChangeEventHeader", type: CHANGE_EVENT_HEADER },
  { name: "EventIdentifier", type: "string" },
  field("Name", "string"),
  field("Industry", "string"),
  field("LastModifiedDate", tsMillis),
];

export function shortNameOf(topic: string): string {
  return topic.slice(topic.lastIndexOf("/") + 1);
}

function fieldsFor(topic: string, shortName: string): AvroField[] {
  if (topic.startsWith("/data/")) return CDC;
  return FIELDS[shortName] ?? GENERIC;
}

export function buildTopicSchema(topic: string): SimTopicSchema {
  const shortName = shortNameOf(topic);
  const schema = {
    type: "record",
    name: shortName.replace(/[^A-Za-z0-9_]/g, "_"),
    namespace: "com.sforce.eventbus",
    fields: fieldsFor(topic, shortName),
  };
  const schemaJson = JSON.stringify(schema);
  // Salesforce schema ids are 22 base64url characters; derive ours from the schema text.
  const schemaId = createHash("sha256").update(schemaJson).digest("base64url").slice(0, 22);
  return { topic, shortName, schemaId, schemaJson, type: avsc.Type.forSchema(schema as avsc.Schema) };
}

/** The PRNG seed of record `n` of `topic` (or of a stored object) under the org's seed. */
export function seedFor(seed: number, topic: string, n: number): number {
  const h = createHash("sha256").update(`${seed}\u0000${topic}\u0000${n}`).digest();
  return h.readUInt32BE(0);
}

/** Events name the directory's first users (src/sim/salesforce-rest/users.ts). */
const EVENT_USERS = 8;
const BROWSERS = ["Chrome 126", "Firefox 128", "Safari 17", "Edge 126"];
const PLATFORMS = ["Mac OSX", "Windows 10", "Linux", "iOS/iPhone", "Android 14"];
const APPS = ["Browser", "Salesforce for iOS", "Data Loader", "Workbench", "sf CLI"];
const OPERATIONS = ["Query", "QueryMore", "Retrieve", "Create", "Update", "Delete"];
const ENTITIES = ["Account", "Contact", "Opportunity", "Case", "Lead", "User"];

function pick<T>(rand: () => number, items: readonly T[]): T {
  return items[Math.floor(rand() * items.length)]!;
}

function sfId(rand: () => number, prefix: string): string {
  const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  let out = prefix;
  while (out.length < 18) out += chars.charAt(Math.floor(rand() * chars.length));
  return out;
}

function ip(rand: () => number): string {
  return `10.${Math.floor(rand() * 256)}.${Math.floor(rand() * 256)}.${1 + Math.floor(rand() * 254)}`;
}

/**
 * The n-th (1-based) record of a topic as a plain object matching the topic's schema, created at
 * `createdMs` (its EventDate 5 ms earlier, so neither is ever later than the moment it is dated at).
 */
export function generateEvent(
  seed: number,
  schema: SimTopicSchema,
  n: number,
  createdMs: number,
  idPrefix = "sim",
): Record<string, unknown> {
  const rand = seededRandom(seedFor(seed, schema.topic, n));
  const eventMs = createdMs - 5;
  const userIndex = Math.floor(rand() * EVENT_USERS);
  const common: Record<string, unknown> = {
    EventIdentifier: `${idPrefix}-${schema.shortName}-${n}`,
    EventDate: eventMs,
    CreatedDate: createdMs,
    UserId: simUserId(userIndex),
    Username: simUsername(userIndex),
    SessionKey: sfId(rand, "vMA"),
    LoginKey: sfId(rand, "Lk"),
    SourceIp: ip(rand),
  };
  const ok = rand() > 0.1;
  const kind = schema.topic.startsWith("/data/") ? "CDC" : schema.shortName;
  switch (kind) {
    case "LoginEventStream":
      return {
        ...common,
        LoginType: pick(rand, ["Application", "Remote Access 2.0", "SAML Sfdc Initiated SSO"]),
        Status: ok ? "Success" : "Invalid Password",
        Application: pick(rand, APPS),
        Browser: pick(rand, BROWSERS),
        Platform: pick(rand, PLATFORMS),
        LoginUrl: "login.salesforce.com",
        CountryIso: pick(rand, ["US", "FR", "DE", "JP", "BR"]),
        City: pick(rand, ["Paris", "Berlin", "Tokyo", "Austin", "São Paulo"]),
        TlsProtocol: "TLS 1.3",
        CipherSuite: "TLS_AES_256_GCM_SHA384",
        AuthMethodReference: null,
        LoginHistoryId: sfId(rand, "0Ya"),
        PolicyOutcome: "NoAction",
        EvaluationTime: Math.round(rand() * 1000) / 100,
        AdditionalInfo: "{}",
      };
    case "ApiEventStream": {
      const entity = pick(rand, ENTITIES);
      return {
        ...common,
        Application: pick(rand, APPS),
        Client: pick(rand, ["SfdcInternalAPI", "Workbench/61.0", "DataLoaderBulkUI/60.0"]),
        ApiType: pick(rand, ["REST API", "SOAP Partner", "Bulk API 2.0"]),
        ApiVersion: 60,
        Operation: pick(rand, OPERATIONS),
        Platform: pick(rand, PLATFORMS),
        QueriedEntities: entity,
        Query: `SELECT Id, Name FROM ${entity} LIMIT ${1 + Math.floor(rand() * 200)}`,
        Records: `{"totalSize":${Math.floor(rand() * 200)},"done":true}`,
        RowsProcessed: Math.floor(rand() * 200),
        RowsReturned: Math.floor(rand() * 200),
        ElapsedTime: Math.floor(rand() * 900),
        SessionLevel: "STANDARD",
        UserAgent: pick(rand, BROWSERS),
        PolicyOutcome: "NoAction",
      };
    }
    case "LightningUriEventStream":
      return {
        ...common,
        Operation: pick(rand, ["Read", "Edit", "Create", "List"]),
        PageUrl: `/lightning/r/${pick(rand, ENTITIES)}/${sfId(rand, "001")}/view`,
        PreviousPageUrl: "/lightning/page/home",
        RecordId: sfId(rand, "001"),
        QueriedEntities: pick(rand, ENTITIES),
        Duration: Math.round(rand() * 5000) / 10,
        EffectivePageTime: Math.floor(rand() * 3000),
        DeviceSessionId: sfId(rand, "dev"),
        AppName: "one:one",
        ConnectionType: pick(rand, ["WIFI", "ETHERNET", "4G"]),
        Browser: pick(rand, BROWSERS),
        OsName: pick(rand, PLATFORMS),
        UserType: "Standard",
      };
    case "LoginAnomalyEvent":
    case "UniversalAnomalyEvent":
      return {
        ...common,
        ...threatValues(kind, rand, n, { userId: common.UserId as string, username: simUsername(userIndex) }),
      };
    case "CDC": {
      const entity = schema.shortName.replace(/ChangeEvent$/, "") || "Account";
      return {
        ChangeEventHeader: {
          entityName: entity,
          recordIds: [sfId(rand, "001")],
          changeType: pick(rand, ["CREATE", "UPDATE", "DELETE"]),
          changeOrigin: "com/salesforce/api/soap/60.0;client=SfdcInternalAPI/",
          transactionKey: sfId(rand, "000"),
          sequenceNumber: 1,
          commitTimestamp: eventMs,
          commitNumber: 11_657_372_702_432 + n,
          commitUser: common.UserId,
          nulledFields: [],
          diffFields: [],
          changedFields: ["0x1A", "3-0x01"],
        },
        EventIdentifier: common.EventIdentifier,
        Name: `${entity} ${n}`,
        Industry: pick(rand, ["Banking", "Retail", null]),
        LastModifiedDate: eventMs,
      };
    }
    default:
      return {
        ...common,
        CreatedById: common.UserId,
        Score: Math.round(rand() * 10000) / 100,
        Summary: `${schema.shortName} signal for ${simUsername(userIndex)}`,
        Operation: pick(rand, OPERATIONS),
      };
  }
}

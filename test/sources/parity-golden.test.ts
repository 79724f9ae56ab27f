// Golden parity: the records of the Python-parity audit (shared spec parity-python.md §2) through
// each source's real shaping path, pinned to the Python sf2loki's output byte for byte: the line,
// the rendered stream labels (the producer's merge of the static set), the timestamp and the
// structured metadata. The expected values are the Python version's, copied from the audit or
// derived from its rules (`json.dumps(sort_keys=True, default=str)`, `str()`), never from ours.
import assert from "node:assert/strict";
import { describe, it, type TestContext } from "node:test";
import avsc from "avsc";
import { LogEntry, type Labels } from "../../src/model.ts";
import type { TokenSource } from "../../src/salesforce/auth.ts";
import type {
  PubSubSubscriber,
  SubscribeItem,
  SubscribeRequest,
} from "../../src/salesforce/pubsub/client.ts";
import { replayIdFromSequence } from "../../src/salesforce/pubsub/proto.ts";
import { parseSchema } from "../../src/salesforce/pubsub/schema-cache.ts";
import { simApexLog, type SimApexLog, type SimRecord } from "../../src/sim/salesforce-rest/index.ts";
import { renderLabels } from "../../src/sinks/receiving-loki/labels.ts";
import { ApexLogSource } from "../../src/sources/apexlog/source.ts";
import { APEXLOG_DEFAULTS } from "../../src/sources/apexlog/settings.ts";
import { EventLogObjectsSource } from "../../src/sources/eventlog-objects/source.ts";
import { OBJECT_DEFAULTS } from "../../src/sources/eventlog-objects/settings.ts";
import { NO_TRANSFORMS } from "../../src/egress/transforms.ts";
import { ElfFileShaper } from "../../src/sources/eventlogfile/shape.ts";
import { rowObject } from "../../src/salesforce/eventlogfile/csv-rows.ts";
import { canonicalJson } from "../../src/sources/shaping/json.ts";
import { PubSubSource, type PubSubSettings } from "../../src/sources/pubsub/source.ts";
import { eachEntry } from "../../src/sources/source.ts";
import { EntryShaper } from "../../src/sources/shaping/entry.ts";
import { ManualClock } from "../../src/util/clock.ts";
import { MemoryCheckpoints, drive, simOrg } from "./shaping-harness.ts";

/** What the single-org daemon adds to every stream (app.ts), winning over entry labels. */
const STATIC: Labels = {
  job: "sf2loki",
  service_name: "sf2loki",
  environment: "production",
  sf_org_id: "00D000000000001AAA",
};
const SM_FIELDS = ["Username", "SourceIp", "EvaluationTime"];
const AUDIT_NOW = Date.UTC(2024, 4, 1, 12, 40);

interface Golden {
  labels: string;
  line: string;
  timestampNs: bigint;
  metadata: Labels;
}

function assertGolden(entry: LogEntry | undefined, want: Golden): void {
  assert.ok(entry, "the source shipped an entry");
  assert.equal(entry.line, want.line);
  assert.equal(renderLabels({ ...entry.labels, ...STATIC }), want.labels);
  assert.equal(entry.timestampNs, want.timestampNs);
  assert.deepEqual({ ...entry.structuredMetadata }, want.metadata);
}

const labelsOf = (source: string, eventType: string): string =>
  `{environment="production",event_type="${eventType}",job="sf2loki",service_name="sf2loki",sf_org_id="00D000000000001AAA",source="${source}"}`;

// ---- Pub/Sub: Avro from the writer schema, through the schema cache's decoder and the source ----

type AvroField = { name: string; type: unknown };
const record = (name: string, fields: AvroField[]) => ({ type: "record", name, fields });

/** One subscription per topic that delivers its events, then idles until aborted. */
class FixedStream implements PubSubSubscriber {
  readonly #events: Map<string, { schema: string; payload: Buffer }[]>;
  constructor(events: Map<string, { schema: string; payload: Buffer }[]>) {
    this.#events = events;
  }
  async *subscribe(
    req: SubscribeRequest,
    signal: AbortSignal,
  ): AsyncGenerator<SubscribeItem, void, undefined> {
    const decoded = (this.#events.get(req.topic) ?? []).map((e, i) => ({
      kind: "event" as const,
      topic: req.topic,
      replayId: replayIdFromSequence(i + 1),
      schemaId: "s1",
      payload: parseSchema(e.schema).fromBuffer(e.payload) as Record<string, unknown>,
    }));
    yield* decoded;
    await new Promise((resolve) => {
      signal.addEventListener("abort", resolve, { once: true });
    });
  }
}

async function pubsubEntry(
  t: TestContext,
  topic: string,
  schema: object,
  value: Record<string, unknown>,
  metadataFields: readonly string[],
): Promise<LogEntry> {
  const writer = avsc.Type.forSchema(schema as avsc.Schema);
  const events = new Map([[topic, [{ schema: JSON.stringify(schema), payload: writer.toBuffer(value) }]]]);
  const settings: PubSubSettings = {
    enabled: true,
    endpoint: "127.0.0.1:0",
    default_num_requested: 100,
    replay_preset: "EARLIEST",
    topics: [topic],
    include: ["*"],
    exclude: [],
    rediscovery_interval: 0,
    sample: {},
    bridge_max_bytes: 1024 * 1024,
  };
  const source = new PubSubSource({
    settings,
    // Never called: the stream is given and no topic is discovered.
    auth: {} as TokenSource,
    org: { name: "", environment: "production" },
    client: new FixedStream(events),
    structuredMetadataFields: metadataFields,
    clock: new ManualClock({ startMs: AUDIT_NOW }),
  });
  const ac = new AbortController();
  t.after(() => {
    ac.abort();
  });
  for await (const e of eachEntry(source.events({ load: () => Promise.resolve(undefined) }, ac.signal))) {
    if (e.checkpointOnly) continue;
    ac.abort();
    return e;
  }
  throw new Error("no entry");
}

const LOGIN_STREAM_FIELDS = (eventDate: unknown): AvroField[] => [
  { name: "EventIdentifier", type: "string" },
  { name: "UserId", type: "string" },
  { name: "Username", type: "string" },
  { name: "EventDate", type: eventDate },
  { name: "CreatedDate", type: "long" },
  { name: "SourceIp", type: "string" },
  { name: "City", type: ["null", "string"] },
  { name: "LoginLatitude", type: ["null", "double"] },
  { name: "EvaluationTime", type: "double" },
  { name: "PolicyId", type: ["null", "string"] },
  { name: "Status", type: "string" },
];
const LOGIN_STREAM_VALUE = {
  EventIdentifier: "a1b2c3d4-0000-0000-0000-000000000001",
  UserId: "005000000000001AAA",
  Username: "alice@example.com",
  EventDate: 1714566896789,
  CreatedDate: 1714566897000,
  SourceIp: "203.0.113.7",
  City: "Zürich",
  LoginLatitude: 37,
  EvaluationTime: 0,
  PolicyId: null,
  Status: "Success",
};
const LOGIN_STREAM_SM = {
  EvaluationTime: "0.0",
  SourceIp: "203.0.113.7",
  Username: "alice@example.com",
  level: "info",
};

describe("golden parity with the Python sf2loki (audit §2)", () => {
  it("§2.1 Pub/Sub RTEM: whole doubles keep .0 in the line and in structured metadata", async (t) => {
    const schema = record("LoginEventStream", LOGIN_STREAM_FIELDS("long"));
    const e = await pubsubEntry(t, "/event/LoginEventStream", schema, LOGIN_STREAM_VALUE, SM_FIELDS);
    assertGolden(e, {
      labels: labelsOf("pubsub", "LoginEventStream"),
      line: '{"City": "Z\\u00fcrich", "CreatedDate": 1714566897000, "EvaluationTime": 0.0, "EventDate": 1714566896789, "EventIdentifier": "a1b2c3d4-0000-0000-0000-000000000001", "LoginLatitude": 37.0, "PolicyId": null, "SourceIp": "203.0.113.7", "Status": "Success", "UserId": "005000000000001AAA", "Username": "alice@example.com"}',
      timestampNs: 1714566896789000000n,
      metadata: LOGIN_STREAM_SM,
    });
  });

  it("§2.1 Pub/Sub RTEM with a timestamp-millis EventDate: Python's str(datetime), same timestamp", async (t) => {
    const schema = record(
      "LoginEventStream",
      LOGIN_STREAM_FIELDS({ type: "long", logicalType: "timestamp-millis" }),
    );
    const e = await pubsubEntry(t, "/event/LoginEventStream", schema, LOGIN_STREAM_VALUE, [
      ...SM_FIELDS,
      "EventDate",
    ]);
    assertGolden(e, {
      labels: labelsOf("pubsub", "LoginEventStream"),
      line: '{"City": "Z\\u00fcrich", "CreatedDate": 1714566897000, "EvaluationTime": 0.0, "EventDate": "2024-05-01 12:34:56.789000+00:00", "EventIdentifier": "a1b2c3d4-0000-0000-0000-000000000001", "LoginLatitude": 37.0, "PolicyId": null, "SourceIp": "203.0.113.7", "Status": "Success", "UserId": "005000000000001AAA", "Username": "alice@example.com"}',
      timestampNs: 1714566896789000000n,
      metadata: { ...LOGIN_STREAM_SM, EventDate: "2024-05-01 12:34:56.789000+00:00" },
    });
  });

  it("§2.1 Avro bytes, fixed, decimal, date, float and large doubles print as Python prints them", async (t) => {
    const schema = record("Order_Event__e", [
      { name: "CreatedDate", type: "long" },
      { name: "Raw__c", type: "bytes" },
      { name: "Tag__c", type: ["null", { type: "fixed", name: "Tag", size: 2 }] },
      { name: "Price__c", type: { type: "bytes", logicalType: "decimal", precision: 10, scale: 2 } },
      { name: "Day__c", type: { type: "int", logicalType: "date" } },
      { name: "Ratio__c", type: "float" },
      { name: "Big__c", type: "double" },
      { name: "Tiny__c", type: "double" },
      { name: "Neg__c", type: "double" },
    ]);
    const value = {
      CreatedDate: 1714566900000,
      Raw__c: Buffer.from([0, 1]),
      Tag__c: Buffer.from([0x27, 0x41]),
      Price__c: Buffer.from([0x30, 0x39]),
      Day__c: 19844,
      Ratio__c: 0.5,
      Big__c: 1e16,
      Tiny__c: 0.00001,
      Neg__c: -0,
    };
    const e = await pubsubEntry(t, "/event/Order_Event__e", schema, value, ["Raw__c", "Big__c", "Neg__c"]);
    assertGolden(e, {
      labels: labelsOf("pubsub", "Order_Event__e"),
      line: `{"Big__c": 1e+16, "CreatedDate": 1714566900000, "Day__c": "2024-05-01", "Neg__c": -0.0, "Price__c": "123.45", "Ratio__c": 0.5, "Raw__c": "b'\\\\x00\\\\x01'", "Tag__c": "b\\"'A\\"", "Tiny__c": 1e-05}`,
      timestampNs: 1714566900000000000n,
      metadata: { Big__c: "1e+16", Neg__c: "-0.0", Raw__c: "b'\\x00\\x01'", level: "info" },
    });
  });

  it("§2.2 custom platform event: Amount__c 100.0", async (t) => {
    const schema = record("Order_Event__e", [
      { name: "CreatedDate", type: "long" },
      { name: "CreatedById", type: "string" },
      { name: "Order_Number__c", type: ["null", "string"] },
      { name: "Amount__c", type: ["null", "double"] },
      { name: "Shipped__c", type: ["null", "boolean"] },
    ]);
    const value = {
      CreatedDate: 1714566900000,
      CreatedById: "005000000000001AAA",
      Order_Number__c: "ORD-1",
      Amount__c: 100,
      Shipped__c: false,
    };
    const e = await pubsubEntry(t, "/event/Order_Event__e", schema, value, ["Amount__c"]);
    assertGolden(e, {
      labels: labelsOf("pubsub", "Order_Event__e"),
      line: '{"Amount__c": 100.0, "CreatedById": "005000000000001AAA", "CreatedDate": 1714566900000, "Order_Number__c": "ORD-1", "Shipped__c": false}',
      timestampNs: 1714566900000000000n,
      metadata: { Amount__c: "100.0", level: "info" },
    });
  });

  it("§2.2 CDC: nested header, enum, commitTimestamp as the time, AnnualRevenue 5000000.0", async (t) => {
    const header = {
      type: "record",
      name: "ChangeEventHeader",
      fields: [
        { name: "entityName", type: "string" },
        { name: "recordIds", type: { type: "array", items: "string" } },
        { name: "changeType", type: { type: "enum", name: "ChangeType", symbols: ["CREATE", "UPDATE"] } },
        { name: "commitTimestamp", type: "long" },
        { name: "changedFields", type: { type: "array", items: "string" } },
      ],
    };
    const schema = record("AccountChangeEvent", [
      { name: "ChangeEventHeader", type: header },
      { name: "Name", type: ["null", "string"] },
      { name: "AnnualRevenue", type: ["null", "double"] },
      { name: "LastModifiedDate", type: ["null", "long"] },
    ]);
    const value = {
      ChangeEventHeader: {
        entityName: "Account",
        recordIds: ["001000000000001AAA"],
        changeType: "UPDATE",
        commitTimestamp: 1714566910000,
        changedFields: ["0x10", "3-0x01"],
      },
      Name: "Acme",
      AnnualRevenue: 5000000,
      LastModifiedDate: 1714566910000,
    };
    const e = await pubsubEntry(t, "/data/AccountChangeEvent", schema, value, ["Name", "AnnualRevenue"]);
    assertGolden(e, {
      labels: labelsOf("pubsub", "AccountChangeEvent"),
      line: '{"AnnualRevenue": 5000000.0, "ChangeEventHeader": {"changeType": "UPDATE", "changedFields": ["0x10", "3-0x01"], "commitTimestamp": 1714566910000, "entityName": "Account", "recordIds": ["001000000000001AAA"]}, "LastModifiedDate": 1714566910000, "Name": "Acme"}',
      timestampNs: 1714566910000000000n,
      metadata: { AnnualRevenue: "5000000.0", Name: "Acme", level: "info" },
    });
  });

  it("§2.3 SOQL-polled LoginEvent: JSON 37.0 and 0.0 stay floats, 12 stays an int", async (t) => {
    const clock = new ManualClock({ startMs: AUDIT_NOW });
    // The simulated org writes these number tokens verbatim, as Salesforce's JSON carries them.
    const json = JSON as unknown as { rawJSON(text: string): unknown };
    const raw = (text: string): unknown => json.rawJSON(text);
    const loginEvent: SimRecord = {
      Id: "0Yw000000000001AAA",
      EventIdentifier: "e-1",
      EventDate: "2024-05-01T12:34:56.000+0000",
      Username: "alice@example.com",
      SourceIp: "203.0.113.7",
      Status: "Success",
      ApiVersion: raw("60.0"),
      EvaluationTime: raw("0.0"),
      LoginLatitude: raw("37.0"),
      RowsProcessed: raw("12"),
      CipherSuite: null,
    };
    const { tokens, rest } = await simOrg(t, clock, { objects: { LoginEvent: [loginEvent] } });
    const source = new EventLogObjectsSource({
      settings: { enabled: true, objects: [{ ...OBJECT_DEFAULTS, name: "LoginEvent" }], transforms: [] },
      tokens,
      apiVersion: "60.0",
      structuredMetadataFields: SM_FIELDS,
      clock,
      once: true,
      rest,
    });
    const { entries } = await drive(source, new MemoryCheckpoints());
    assert.equal(entries.length, 1);
    assertGolden(entries[0], {
      labels: labelsOf("eventlog_objects", "LoginEvent"),
      line: '{"ApiVersion": 60.0, "CipherSuite": null, "EvaluationTime": 0.0, "EventDate": "2024-05-01T12:34:56.000+0000", "EventIdentifier": "e-1", "Id": "0Yw000000000001AAA", "LoginLatitude": 37.0, "RowsProcessed": 12, "SourceIp": "203.0.113.7", "Status": "Success", "Username": "alice@example.com", "attributes": {"type": "LoginEvent", "url": "/services/data/v60.0/sobjects/LoginEvent/0Yw000000000001AAA"}}',
      timestampNs: 1714566896000000000n,
      metadata: LOGIN_STREAM_SM,
    });
  });

  describe("§2.4 EventLogFile Login row", () => {
    const HEADER = [
      "EVENT_TYPE",
      "TIMESTAMP",
      "REQUEST_ID",
      "ORGANIZATION_ID",
      "USER_ID",
      "RUN_TIME",
      "CPU_TIME",
      "URI",
      "SESSION_KEY",
      "LOGIN_KEY",
      "USER_TYPE",
      "REQUEST_STATUS",
      "DB_TOTAL_TIME",
      "LOGIN_STATUS",
      "USER_NAME",
      "CLIENT_IP",
      "TIMESTAMP_DERIVED",
    ];
    const CELLS = [
      "Login",
      "20240501123456.789",
      "4exLFFQZ1234",
      "00D000000000001",
      "005000000000001",
      "80",
      "30",
      "/index.jsp",
      "",
      "GeJCsym5eyvtEK2I",
      "Standard",
      "",
      "12345678",
      "LOGIN_NO_ERROR",
      "alice@example.com",
      "203.0.113.7",
      "2024-05-01T12:34:56.789Z",
    ];
    const shaperFor = (header: readonly string[]) =>
      new ElfFileShaper(header, {
        type: { name: "Login", structured_metadata_fields: null, labels: [], sample: 1 },
        fields: ["CLIENT_IP", "USER_NAME"],
        timestampColumn: "TIMESTAMP_DERIVED",
        transforms: NO_TRANSFORMS,
        shaper: new EntryShaper("eventlogfile", new ManualClock({ startMs: AUDIT_NOW })),
      });
    const token = { key: "eventlogfile:Login", value: "{}" };
    const metadata = { CLIENT_IP: "203.0.113.7", USER_NAME: "alice@example.com", level: "info" };

    it("pins line, labels, TIMESTAMP_DERIVED time and metadata", () => {
      assertGolden(shaperFor(HEADER).entry(CELLS, undefined, token), {
        labels: labelsOf("eventlogfile", "Login"),
        line: '{"CLIENT_IP": "203.0.113.7", "CPU_TIME": "30", "DB_TOTAL_TIME": "12345678", "EVENT_TYPE": "Login", "LOGIN_KEY": "GeJCsym5eyvtEK2I", "LOGIN_STATUS": "LOGIN_NO_ERROR", "ORGANIZATION_ID": "00D000000000001", "REQUEST_ID": "4exLFFQZ1234", "REQUEST_STATUS": "", "RUN_TIME": "80", "SESSION_KEY": "", "TIMESTAMP": "20240501123456.789", "TIMESTAMP_DERIVED": "2024-05-01T12:34:56.789Z", "URI": "/index.jsp", "USER_ID": "005000000000001", "USER_NAME": "alice@example.com", "USER_TYPE": "Standard"}',
        timestampNs: 1714566896789000000n,
        metadata,
      });
    });

    it("falls back to the compact TIMESTAMP for the same instant", () => {
      const e = shaperFor(HEADER.slice(0, -1)).entry(CELLS.slice(0, -1), undefined, token);
      assert.equal(e?.timestampNs, 1714566896789000000n);
    });

    it("escapes every awkward cell as json.dumps(sort_keys=True) does", () => {
      const awkward = ['say "hi"', "back\\slash", "tab\there\nnew", "Zürich", "\u007f", "😀", "", "\u0000"];
      const shaper = shaperFor(HEADER);
      for (const cell of awkward) {
        const cells = [...CELLS];
        cells[HEADER.indexOf("URI")] = cell;
        cells[HEADER.indexOf("CLIENT_IP")] = cell;
        assert.equal(shaper.entry(cells, undefined, token)?.line, canonicalJson(rowObject(HEADER, cells)));
      }
      const quoted = [...CELLS];
      quoted[HEADER.indexOf("CLIENT_IP")] = 'say "hi"';
      assert.ok(shaper.entry(quoted, undefined, token)?.line.startsWith('{"CLIENT_IP": "say \\"hi\\"", '));
    });
  });

  describe('§2.5 ApexLog: a null field is Python\'s "None"', () => {
    const START = "2024-05-01T12:34:56.000+0000";
    const log = (extra: Partial<SimApexLog>): SimApexLog =>
      simApexLog(1, Date.UTC(2024, 4, 1, 12, 34, 56), {
        Id: "07L000000000001AAA",
        LogUserId: "005000000000001AAA",
        StartTime: START,
        Operation: "/apex/AccountPage",
        Request: "Application",
        Status: "Success",
        // Salesforce sends null here for most logs; the sim's type says string.
        Application: null as unknown as string,
        DurationMilliseconds: 42,
        Location: "Monitoring",
        body: "60.0 APEX_CODE,DEBUG\n12:34:56.0 (1)|EXECUTION_STARTED\n",
        ...extra,
      });
    const apexEntry = async (
      t: TestContext,
      l: SimApexLog,
      maxBody: number,
    ): Promise<LogEntry | undefined> => {
      const clock = new ManualClock({ startMs: AUDIT_NOW });
      const { tokens, rest } = await simOrg(t, clock, { apexLogs: [l] });
      const source = new ApexLogSource({
        settings: { ...APEXLOG_DEFAULTS, enabled: true, max_body_bytes: maxBody },
        tokens,
        apiVersion: "60.0",
        structuredMetadataFields: [],
        clock,
        once: true,
        rest,
      });
      const { entries } = await drive(source, new MemoryCheckpoints());
      return entries[0];
    };
    const metadata = (length: number) => ({
      Application: "None",
      DurationMilliseconds: "42",
      Id: "07L000000000001AAA",
      Location: "Monitoring",
      LogLength: String(length),
      LogUserId: "005000000000001AAA",
      Operation: "/apex/AccountPage",
      Request: "Application",
      StartTime: START,
      Status: "Success",
      level: "info",
    });

    it('with the body: the raw body is the line; metadata carries Application="None"', async (t) => {
      const l = log({});
      assertGolden(await apexEntry(t, l, 1_000_000), {
        labels: labelsOf("apexlog", "apexlog"),
        line: l.body,
        timestampNs: 1714566896000000000n,
        metadata: metadata(Buffer.byteLength(l.body)),
      });
    });

    it('metadata-only (size): the line is the metadata JSON with "None"', async (t) => {
      assertGolden(await apexEntry(t, log({ LogLength: 5000 }), 1000), {
        labels: labelsOf("apexlog", "apexlog"),
        line: '{"Application": "None", "DurationMilliseconds": 42, "Id": "07L000000000001AAA", "Location": "Monitoring", "LogLength": 5000, "LogUserId": "005000000000001AAA", "Operation": "/apex/AccountPage", "Request": "Application", "StartTime": "2024-05-01T12:34:56.000+0000", "Status": "Success"}',
        timestampNs: 1714566896000000000n,
        metadata: { ...metadata(5000), body_skipped: "true", body_skip_reason: "size" },
      });
    });
  });
});

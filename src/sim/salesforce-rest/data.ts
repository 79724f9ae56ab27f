// What the simulated org holds: SOQL-queryable records, EventLogFile entries whose CSV bodies are
// generated on demand, ApexLogs with bodies, org limits and the describeGlobal list. Tests mutate it
// between cycles (new rows, late-visible rows) through `sim.data`.
import type { RowCustomizer } from "./elf-csv.ts";
import { estimatedLength } from "./elf-csv.ts";

/** A queryable record. Keys starting with `$` are the simulator's own and never returned. */
export type SimRecord = Record<string, unknown> & {
  /** The record becomes queryable only once the sim clock reaches this (late visibility, #87). */
  $visibleAtMs?: number;
};

export interface SimEventLogFile {
  Id: string;
  EventType: string;
  Interval: "Hourly" | "Daily";
  /** Salesforce format, e.g. `2026-01-01T10:00:00.000+0000`. */
  LogDate: string;
  CreatedDate: string;
  Sequence: number;
  rows: number;
  /** REQUEST_ID numbering starts here (see `elfFile`). */
  firstRow?: number;
  customize?: RowCustomizer;
  $visibleAtMs?: number;
}

export interface SimApexLog {
  Id: string;
  StartTime: string;
  LogUserId: string;
  Username: string;
  Operation: string;
  Request: string;
  Status: string;
  Application: string;
  DurationMilliseconds: number;
  Location: string;
  body: string;
  /** Defaults to the body's UTF-8 length. */
  LogLength?: number;
  $visibleAtMs?: number;
}

export interface SimLimit {
  Max: unknown;
  Remaining: unknown;
}

export interface SimData {
  objects: Record<string, SimRecord[]>;
  /** Objects that behave like Big Objects: only `ORDER BY <one field> DESC`, no paging. */
  bigObjects: Set<string>;
  eventLogFiles: SimEventLogFile[];
  apexLogs: SimApexLog[];
  limits: Record<string, SimLimit>;
  /** describeGlobal names. */
  sobjects: string[];
  /** Tooling `TraceFlag` records (`Id`, `ExpirationDate`, ...): what `doctor`'s traceflags row counts. */
  traceFlags: SimRecord[];
  /** Tooling `ManagedEventSubscription` records: the very rows the org's ManagedSubscribe serves. */
  managedEventSubscriptions?: SimRecord[];
  /** The User object (`enrich.users` reads it); kept out of `objects` so nothing polls it. */
  users?: SimRecord[];
}

/** An 18-character Id: a 3-character key prefix and a zero-padded counter. */
export function simId(prefix: string, n: number): string {
  return `${prefix.padEnd(3, "0").slice(0, 3)}SIM${String(n).padStart(12, "0")}`;
}

/** `2026-01-01T10:00:00.000+0000`: how Salesforce writes datetimes. */
export function sfDatetime(ms: number): string {
  return new Date(ms).toISOString().replace("Z", "+0000");
}

/** What `GET sobjects/EventLogFile/describe` answers: enough of Salesforce's shape for a client. */
export const EVENT_LOG_FILE_DESCRIBE = {
  name: "EventLogFile",
  label: "Event Log File",
  queryable: true,
  fields: [
    "Id",
    "EventType",
    "Interval",
    "LogDate",
    "CreatedDate",
    "LogFileLength",
    "Sequence",
    "LogFile",
  ].map((name) => ({ name, type: name === "LogFile" ? "base64" : "string" })),
};

/** The listing record of a file, as the REST API returns it. */
export function eventLogFileRecord(f: SimEventLogFile): Record<string, unknown> {
  return {
    Id: f.Id,
    EventType: f.EventType,
    Interval: f.Interval,
    LogDate: f.LogDate,
    CreatedDate: f.CreatedDate,
    LogFileLength: estimatedLength(f.rows),
    Sequence: f.Sequence,
  };
}

export function apexLogRecord(l: SimApexLog): Record<string, unknown> {
  return {
    Id: l.Id,
    LogUserId: l.LogUserId,
    LogUser: { Username: l.Username },
    LogLength: l.LogLength ?? Buffer.byteLength(l.body, "utf8"),
    Operation: l.Operation,
    Request: l.Request,
    Status: l.Status,
    StartTime: l.StartTime,
    Application: l.Application,
    DurationMilliseconds: l.DurationMilliseconds,
    Location: l.Location,
  };
}

export const DEFAULT_LIMITS: Record<string, SimLimit> = {
  DailyApiRequests: { Max: 15000, Remaining: 14876 },
  DailyBulkApiBatches: { Max: 15000, Remaining: 15000 },
  HourlyPublishedPlatformEvents: { Max: 50000, Remaining: 49990 },
};

export const DEFAULT_SOBJECTS = [
  "Account",
  "ApiEvent",
  "ApiEventStream",
  "ApiAnomalyEvent",
  "ApiAnomalyEventStore",
  "EventLogFile",
  "LoginAnomalyEvent",
  "LoginAnomalyEventStore",
  "LoginEvent",
  "LoginEventStream",
  "LogoutEventStream",
  "SetupAuditTrail",
  "UniversalAnomalyEvent",
  "UniversalAnomalyEventStore",
];

/**
 * A file of `rows` rows created at `createdMs`, numbered after the type's files already in `data`
 * so REQUEST_IDs (`sim-<type>-<n>`) are unique per type.
 */
export function elfFile(
  data: Pick<SimData, "eventLogFiles">,
  init: {
    n: number;
    eventType: string;
    createdMs: number;
    rows: number;
    interval?: "Hourly" | "Daily";
    customize?: RowCustomizer;
  },
): SimEventLogFile {
  const interval = init.interval ?? "Hourly";
  const firstRow = data.eventLogFiles
    .filter((f) => f.EventType === init.eventType)
    .reduce((max, f) => Math.max(max, (f.firstRow ?? 0) + f.rows), 0);
  const file: SimEventLogFile = {
    Id: simId("0AT", init.n),
    EventType: init.eventType,
    Interval: interval,
    LogDate: sfDatetime(init.createdMs - (interval === "Hourly" ? 3_600_000 : 86_400_000)),
    CreatedDate: sfDatetime(init.createdMs),
    Sequence: 1,
    rows: init.rows,
    firstRow,
    ...(init.customize ? { customize: init.customize } : {}),
  };
  data.eventLogFiles.push(file);
  return file;
}

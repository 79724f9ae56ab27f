// Generated REST data for a simulated org that a real daemon polls on the system clock: everything is
// placed in the recent past (inside the sources' default lookbacks, outside the ELF settle window),
// with ids a test can enumerate: record Ids `simId(<prefix>, n)`, ELF rows `sim-<EventType>-<n>`,
// ApexLog Ids `simId("07L", n)`. The `append*` helpers add newer data to a running org (records that
// arrive while sf2loki is down).
import { APEX_USERS, simUserId, simUsername } from "./users.ts";
import { seedFor } from "../salesforce/events.ts";
import { threatEventOf, threatValues } from "../salesforce/threat-detection.ts";
import { seededRandom } from "../../util/prng.ts";
import { elfFile, sfDatetime, simId, type SimApexLog, type SimData, type SimRecord } from "./data.ts";

const MIN = 60_000;
const HOUR = 60 * MIN;

export interface SimPollingData {
  /** SOQL-queryable objects by name: `records` records, `tie` of them sharing one EventDate. */
  objects?: Record<string, { records: number; tie?: number }>;
  /** EventLogFile types by name: `rows` rows split over `files` Hourly files (default 1). */
  eventLogFiles?: Record<string, { rows: number; files?: number }>;
  /**
   * Daily EventLogFiles for the last `days` days, one file per type and day with `rows` rows: what
   * `sf2loki backfill` loads. The newest is created 10 minutes before now, each older one a day earlier.
   */
  dailyEventLogFiles?: { types: Record<string, number>; days: number };
  /** ApexLogs, each with a small body naming its Id. */
  apexLogs?: number;
  /** Active TraceFlags (expiring a day after now). */
  traceFlags?: number;
}

const DAY = 24 * HOUR;

/** The 3-character Id prefix of the i-th generated object (`0Y0`, `0Y1`, ...). */
export function objectIdPrefix(index: number): string {
  return `0Y${index.toString(36)}`;
}

/** Fills `data` with `spec`'s records, all between about 50 and 2 minutes before `nowMs`. */
export function addPollingData(data: SimData, spec: SimPollingData, nowMs: number): void {
  const objectNames = Object.keys(spec.objects ?? {});
  objectNames.forEach((name, index) => {
    const o = spec.objects![name]!;
    data.objects[name] = [];
    appendObjectRecords(data, name, o.records, {
      prefix: objectIdPrefix(index),
      fromMs: nowMs - 40 * MIN,
      toMs: nowMs - 2 * MIN,
      tie: o.tie ?? 0,
    });
  });
  for (const [type, e] of Object.entries(spec.eventLogFiles ?? {})) {
    const files = Math.max(1, e.files ?? 1);
    for (let i = 0; i < files; i++) {
      const rows = Math.floor(e.rows / files) + (i < e.rows % files ? 1 : 0);
      // Oldest first, the newest 10 minutes old: past the default 5-minute Hourly settle window.
      appendElfFile(data, type, rows, nowMs - 10 * MIN - (files - 1 - i) * HOUR);
    }
  }
  const daily = spec.dailyEventLogFiles;
  for (let d = (daily?.days ?? 0) - 1; d >= 0; d--) {
    for (const [type, rows] of Object.entries(daily!.types)) {
      elfFile(data, {
        n: data.eventLogFiles.length + 1,
        eventType: type,
        createdMs: nowMs - 10 * MIN - d * DAY,
        rows,
        interval: "Daily",
      });
    }
  }
  if (spec.apexLogs) appendApexLogs(data, spec.apexLogs, nowMs - 40 * MIN, nowMs - 2 * MIN);
  for (let i = 0; i < (spec.traceFlags ?? 0); i++) {
    data.traceFlags.push({
      Id: simId("7tf", i),
      LogType: "USER_DEBUG",
      TracedEntityId: "005SIM000000000001",
      StartDate: sfDatetime(nowMs - HOUR),
      ExpirationDate: sfDatetime(nowMs + DAY),
    });
  }
}

/**
 * Appends `count` records to `name`, EventDates spread evenly over [fromMs, toMs]; with `tie`, that
 * many records in the middle share one EventDate (Ids still ascend in n order). A Threat Detection
 * store (`LoginAnomalyEventStore`, `UniversalAnomalyEventStore`) gets its event's documented fields.
 */
export function appendObjectRecords(
  data: SimData,
  name: string,
  count: number,
  opts: { prefix: string; fromMs: number; toMs: number; tie?: number },
): SimRecord[] {
  const records = (data.objects[name] ??= []);
  const first = records.length;
  const tie = Math.min(opts.tie ?? 0, count);
  const tieStart = Math.floor((count - tie) / 2);
  const step = count > 1 ? (opts.toMs - opts.fromMs) / (count - 1) : 0;
  const added: SimRecord[] = [];
  const threat = threatEventOf(name);
  for (let i = 0; i < count; i++) {
    const slot = i >= tieStart && i < tieStart + tie ? tieStart : i;
    const n = first + i;
    const eventMs = Math.floor(opts.fromMs + slot * step);
    const record: SimRecord = threat
      ? threatRecord(threat, name, n, simId(opts.prefix, n), eventMs)
      : {
          Id: simId(opts.prefix, n),
          EventDate: sfDatetime(eventMs),
          UserId: simUserId(n % 7),
          Username: simUsername(n % 7),
          LoginType: "Application",
          Status: n % 10 === 0 ? "Failed" : "Success",
        };
    records.push(record);
    added.push(record);
  }
  return added;
}

/**
 * Stored Threat Detection record `n`: its event's fields (the same generator the Pub/Sub topic uses),
 * dated as the REST API writes dates, stored 30 s after the anomaly it records.
 */
function threatRecord(
  event: NonNullable<ReturnType<typeof threatEventOf>>,
  name: string,
  n: number,
  id: string,
  eventMs: number,
): SimRecord {
  const rand = seededRandom(seedFor(1, name, n));
  const user = simUsername(n % 7);
  const userId = simUserId(n % 7);
  return {
    Id: id,
    EventIdentifier: `sim-${name}-${n}`,
    EventDate: sfDatetime(eventMs),
    CreatedDate: sfDatetime(eventMs + 30_000),
    UserId: userId,
    Username: user,
    SessionKey: simId("vMA", n),
    LoginKey: simId("Lk0", n),
    SourceIp: `10.0.${n % 256}.${1 + (n % 254)}`,
    ...threatValues(event, rand, n + 1, { userId, username: user }),
  };
}

/** One Hourly file of `rows` rows created at `createdMs`; its REQUEST_IDs continue the type's numbering. */
export function appendElfFile(data: SimData, eventType: string, rows: number, createdMs: number): void {
  elfFile(data, { n: data.eventLogFiles.length + 1, eventType, createdMs, rows });
}

/** ApexLog n (Id `simId("07L", n)`), started at `startMs`, whose body names its Id. */
export function simApexLog(n: number, startMs: number, extra: Partial<SimApexLog> = {}): SimApexLog {
  const id = simId("07L", n);
  return {
    Id: id,
    StartTime: sfDatetime(startMs),
    LogUserId: simUserId(n % 2 === 0 ? APEX_USERS.dev : APEX_USERS.ops),
    Username: simUsername(n % 2 === 0 ? APEX_USERS.dev : APEX_USERS.ops),
    Operation: "/apex/AccountPage",
    Request: "Application",
    Status: n % 5 === 0 ? "Attempt to de-reference a null object" : "Success",
    Application: "Browser",
    DurationMilliseconds: 40 + (n % 100),
    Location: "Monitoring",
    body: `60.0 APEX_CODE,DEBUG\n12:00:00.0 (1)|EXECUTION_STARTED\napexlog ${id}\n`,
    ...extra,
  };
}

/** Appends `count` ApexLogs, StartTimes spread over [fromMs, toMs]. */
export function appendApexLogs(data: SimData, count: number, fromMs: number, toMs: number): SimApexLog[] {
  const first = data.apexLogs.length;
  const step = count > 1 ? (toMs - fromMs) / (count - 1) : 0;
  const added = Array.from({ length: count }, (_, i) => simApexLog(first + i, Math.floor(fromMs + i * step)));
  data.apexLogs.push(...added);
  return added;
}

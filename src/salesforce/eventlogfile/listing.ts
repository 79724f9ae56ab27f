// EventLogFile listing and discovery queries, and the coercion of a listed row.
import { parseSfTimestampNs, soqlDatetime } from "../soql-datetime.ts";
import { soqlIdentifier, soqlString } from "../soql-literals.ts";

export type ElfInterval = "Hourly" | "Daily";

export interface ListedFile {
  id: string;
  eventType: string;
  interval: string;
  logDate: string;
  /** As Salesforce returned it; stored verbatim in the checkpoint. */
  createdDate: string;
  createdNs: bigint | undefined;
  logFileLength: number;
  sequence: number;
}

/** Strictly after this listed file, in (CreatedDate, Id) order: the cursor for the next page. */
export interface ListingAfter {
  createdDate: string;
  id: string;
}

export function discoveryQuery(interval: ElfInterval): string {
  return `SELECT EventType FROM EventLogFile WHERE Interval=${soqlString(interval)} GROUP BY EventType`;
}

export function listingQuery(
  eventType: string,
  interval: ElfInterval,
  since: string,
  after: ListingAfter | undefined,
  pageSize: number,
): string {
  const cursor = after
    ? `(CreatedDate > ${soqlDatetime(after.createdDate)} OR (CreatedDate = ${soqlDatetime(after.createdDate)} AND Id > ${soqlString(after.id)}))`
    : `CreatedDate >= ${soqlDatetime(since)}`;
  return (
    "SELECT Id,EventType,Interval,LogDate,CreatedDate,LogFileLength,Sequence FROM EventLogFile" +
    ` WHERE EventType=${soqlString(soqlIdentifier(eventType))} AND Interval=${soqlString(interval)} AND ${cursor}` +
    ` ORDER BY CreatedDate, Id LIMIT ${Math.max(1, Math.trunc(pageSize))}`
  );
}

/** Numbers may arrive as `5.0` or strings; missing or junk is 0. */
function integer(v: unknown): number {
  const n = Math.trunc(Number(v));
  return Number.isFinite(n) ? n : 0;
}

/** A listed row, or undefined when it has no usable Id or CreatedDate (#94: contained, not a crash). */
export function listedFileOf(record: Record<string, unknown>): ListedFile | undefined {
  const id = record.Id;
  const created = record.CreatedDate;
  if (typeof id !== "string" || id === "" || typeof created !== "string") return undefined;
  return {
    id,
    eventType: typeof record.EventType === "string" ? record.EventType : "",
    interval: typeof record.Interval === "string" ? record.Interval : "",
    logDate: typeof record.LogDate === "string" ? record.LogDate : "",
    createdDate: created,
    createdNs: parseSfTimestampNs(created),
    logFileLength: integer(record.LogFileLength),
    sequence: integer(record.Sequence),
  };
}

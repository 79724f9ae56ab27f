// Every file of one EventType still to backfill, in push order: listed page by page through the
// daemon's EventLogFile client from the cursor (or --since), sorted by (CreatedDate, Id), cut at
// --until, without the boundary files the checkpoint already names.
import type { EventLogFileClient } from "../salesforce/eventlogfile/client.ts";
import type { ElfInterval, ListedFile, ListingAfter } from "../salesforce/eventlogfile/listing.ts";
import { formatIsoSeconds } from "../salesforce/soql-datetime.ts";
import type { BackfillCursor } from "./checkpoint.ts";

export interface PendingQuery {
  eventType: string;
  interval: ElfInterval;
  cursor: BackfillCursor;
  sinceMs: number;
  untilMs: number | undefined;
  pageSize: number;
}

function byCreatedThenId(a: ListedFile, b: ListedFile): number {
  // Unparseable dates first, as Python sorts them.
  const an = a.createdNs ?? -1n;
  const bn = b.createdNs ?? -1n;
  if (an !== bn) return an < bn ? -1 : 1;
  return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
}

export async function pendingFiles(
  client: EventLogFileClient,
  q: PendingQuery,
  signal: AbortSignal,
): Promise<{ files: ListedFile[]; calls: number }> {
  const untilNs = q.untilMs === undefined ? undefined : BigInt(q.untilMs) * 1_000_000n;
  const since = q.cursor.lastCreated ?? formatIsoSeconds(q.sinceMs);
  const files: ListedFile[] = [];
  let after: ListingAfter | undefined;
  let calls = 0;
  for (;;) {
    const page = await client.list(
      { eventType: q.eventType, interval: q.interval, since, after, pageSize: q.pageSize },
      signal,
    );
    calls++;
    const sorted = [...page.files].sort(byCreatedThenId);
    for (const file of sorted) {
      if (untilNs !== undefined && file.createdNs !== undefined && file.createdNs >= untilNs) {
        return { files, calls };
      }
      if (file.createdDate === q.cursor.lastCreated && q.cursor.doneIds.has(file.id)) continue;
      files.push(file);
    }
    const last = sorted.at(-1);
    if (page.listed < q.pageSize || last === undefined) return { files, calls };
    after = { createdDate: last.createdDate, id: last.id };
  }
}

// The Big Object drain (spec A §6.4): Big Objects refuse ascending order, compound ORDER BY and
// paging, so one cycle fetches the window between the watermark and the settle bound newest-first,
// then hands it back oldest-first. Two fixes shape it:
// - Memory (#46): at most `max_catchup_records` are kept, the oldest ones, so the watermark only
//   moves through a contiguous oldest slice and a later cycle finds the rest again.
// - Ties (#38, #95): a full page whose rows all share one timestamp cannot move the bound. Upstream
//   excluded the seen Ids with a growing `Id NOT IN (...)` that overflowed the URI past ~550 rows;
//   here the tie group is split into Id ranges instead (a full page splits its range at the median
//   Id), so every query stays two Id literals long and a tie group of any size drains completely.
import type { RestClient, SObjectRecord } from "../../salesforce/rest.ts";
import { formatIsoMs, parseSfTimestampNs } from "../../salesforce/soql-datetime.ts";
import { PAGE, descendingQuery, type DescendingWindow } from "./query.ts";

export interface DrainRequest {
  rest: RestClient;
  object: string;
  tsField: string;
  watermark: string;
  /** SOQL literal of now - settle_window: the exclusive upper bound of the whole drain. */
  boundLiteral: string | undefined;
  maxRecords: number;
  signal: AbortSignal;
}

export interface DrainResult {
  /** Oldest first (unparseable timestamps first); empty when the drain was cancelled. */
  records: SObjectRecord[];
  /** Set when a full page brought nothing new: where the drain stopped. */
  stalledAt: string | undefined;
}

type IdRange = { after: string | undefined; upTo: string | undefined };

function tsNs(record: SObjectRecord, field: string): bigint | undefined {
  const v = record[field];
  return typeof v === "string" ? parseSfTimestampNs(v) : undefined;
}

function idOf(record: SObjectRecord): string | undefined {
  return typeof record.Id === "string" && record.Id !== "" ? record.Id : undefined;
}

/** Splits a range that returned a full page at the median of the Ids it returned. */
function split(range: IdRange, page: SObjectRecord[]): IdRange[] {
  const ids = page
    .map(idOf)
    .filter((id): id is string => id !== undefined)
    .sort();
  const median = ids[Math.floor((ids.length - 1) / 2)];
  if (median === undefined) return [];
  return [
    { after: range.after, upTo: median },
    { after: median, upTo: range.upTo },
  ];
}

export async function drainDescending(req: DrainRequest): Promise<DrainResult> {
  const collected = new Map<string, SObjectRecord>();
  let anonymous = 0;
  const add = (record: SObjectRecord): boolean => {
    const key = idOf(record) ?? `\u0000${anonymous++}`;
    if (collected.has(key)) return false;
    collected.set(key, record);
    return true;
  };
  const evict = (): void => {
    if (req.maxRecords <= 0) return;
    // Pages arrive newest first, so the earliest inserted are the newest: keep the oldest.
    for (const key of collected.keys()) {
      if (collected.size <= req.maxRecords) break;
      collected.delete(key);
    }
  };
  let upper: DescendingWindow["upper"] =
    req.boundLiteral === undefined ? undefined : { literal: req.boundLiteral, inclusive: false };
  let tie: { literal: string; ranges: IdRange[] } | undefined;
  let stalledAt: string | undefined;

  for (;;) {
    if (req.signal.aborted) return { records: [], stalledAt: undefined };
    const range = tie?.ranges.pop();
    const window: DescendingWindow = tie && range ? { tie: { literal: tie.literal, ...range } } : { upper };
    const page = await req.rest.queryAll(descendingQuery(req.object, req.tsField, req.watermark, window), {
      signal: req.signal,
      where: `${req.object} (Big Object drain)`,
      pythonNumbers: true,
    });
    let fresh = 0;
    for (const record of page) if (add(record)) fresh++;
    evict();
    const full = page.length >= PAGE;
    if (tie && range) {
      if (full && fresh === 0) {
        stalledAt = tie.literal;
        break;
      }
      if (full) tie.ranges.push(...split(range, page));
      if (tie.ranges.length === 0) {
        upper = { literal: tie.literal, inclusive: false };
        tie = undefined;
      }
      continue;
    }
    if (!full) break;
    const stamps = new Set(page.map((r) => tsNs(r, req.tsField)));
    const only = stamps.size === 1 ? [...stamps][0] : undefined;
    if (only !== undefined) {
      tie = { literal: formatIsoMs(only), ranges: split({ after: undefined, upTo: undefined }, page) };
      continue;
    }
    if (fresh === 0) {
      stalledAt = upper?.literal ?? req.watermark;
      break;
    }
    // Inclusive, so a tie straddling the page edge is fetched again and deduped, never skipped.
    const oldest = page
      .map((r) => tsNs(r, req.tsField))
      .reduce<bigint | undefined>(
        (min, ns) => (ns === undefined ? min : min === undefined || ns < min ? ns : min),
        undefined,
      );
    if (oldest === undefined) break;
    upper = { literal: formatIsoMs(oldest), inclusive: true };
  }

  const records = [...collected.values()];
  const keyed = records.map((r, i) => ({ r, i, ns: tsNs(r, req.tsField) }));
  keyed.sort((a, b) => {
    if (a.ns === b.ns) return a.i - b.i;
    if (a.ns === undefined) return -1;
    if (b.ns === undefined) return 1;
    return a.ns < b.ns ? -1 : 1;
  });
  return { records: keyed.map((k) => k.r), stalledAt };
}

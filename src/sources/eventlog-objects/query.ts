// The SOQL texts of eventlog_objects. Every name is validated and every literal escaped (#150).
import { soqlDatetime } from "../../salesforce/soql-datetime.ts";
import { soqlIdentifier, soqlString } from "../../salesforce/soql-literals.ts";

/** FIELDS(ALL) caps LIMIT at 200. */
export const PAGE = 200;

/**
 * Ascending page after the cursor (fix #38): strictly after (watermark, lastId) in (ts, Id) order
 * when an Id at the watermark is known, else everything at or after the watermark; below `bound`.
 */
export function ascendingQuery(
  object: string,
  tsField: string,
  watermark: string,
  lastId: string | undefined,
  boundLiteral: string | undefined,
): string {
  const ts = soqlIdentifier(tsField);
  const wm = soqlDatetime(watermark);
  let where =
    lastId === undefined
      ? `${ts} >= ${wm}`
      : `(${ts} > ${wm} OR (${ts} = ${wm} AND Id > ${soqlString(lastId)}))`;
  if (boundLiteral !== undefined) where += ` AND ${ts} < ${boundLiteral}`;
  return `SELECT FIELDS(ALL) FROM ${soqlIdentifier(object)} WHERE ${where} ORDER BY ${ts} ASC, Id ASC LIMIT ${PAGE}`;
}

export interface DescendingWindow {
  /** Everything below this instant (a SOQL literal); inclusive or not. */
  upper?: { literal: string; inclusive: boolean } | undefined;
  /** Tie escape: only rows at exactly `ts`, with Id in (after, upTo]. */
  tie?: { literal: string; after: string | undefined; upTo: string | undefined } | undefined;
}

/** Newest-first page of a Big Object between the watermark and the window's bounds. */
export function descendingQuery(
  object: string,
  tsField: string,
  watermark: string,
  w: DescendingWindow,
): string {
  const ts = soqlIdentifier(tsField);
  const where = [`${ts} >= ${soqlDatetime(watermark)}`];
  if (w.tie) {
    where.push(`${ts} = ${w.tie.literal}`);
    if (w.tie.after !== undefined) where.push(`Id > ${soqlString(w.tie.after)}`);
    if (w.tie.upTo !== undefined) where.push(`Id <= ${soqlString(w.tie.upTo)}`);
  } else if (w.upper) {
    where.push(`${ts} ${w.upper.inclusive ? "<=" : "<"} ${w.upper.literal}`);
  }
  return `SELECT FIELDS(ALL) FROM ${soqlIdentifier(object)} WHERE ${where.join(" AND ")} ORDER BY ${ts} DESC LIMIT ${PAGE}`;
}

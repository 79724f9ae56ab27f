// The simulated Loki's log query (`GET /loki/api/v1/query_range`), enough of Loki's to answer what
// sf2loki's reconcile lookups ask (#27): an exact selector of `=` matchers, a [start, end) range in
// nanoseconds, a limit, forward direction. Like Loki's, a log query returns each distinct entry once
// (copies identical in stream, timestamp and line collapse), from the asking tenant's data only.
import { parseLabelSelector, LabelSyntaxError } from "./loki-labels.ts";
import type { AcceptedStore } from "./loki-store.ts";

export interface QueryAnswer {
  status: number;
  body: string;
}

/**
 * `ingesterEdgeNs`: as a Loki querier, entries still in the ingester (not flushed) dated before this
 * are not asked for (now - query_ingesters_within); undefined: every entry answers.
 */
export function queryRange(
  store: AcceptedStore,
  tenant: string,
  params: URLSearchParams,
  ingesterEdgeNs?: bigint,
): QueryAnswer {
  let selector: Record<string, string>;
  try {
    selector = parseLabelSelector(params.get("query") ?? "");
  } catch (err) {
    if (err instanceof LabelSyntaxError) return { status: 400, body: err.message };
    throw err;
  }
  const start = BigInt(params.get("start") ?? "0");
  const end = BigInt(params.get("end") ?? String(BigInt(Date.now()) * 1_000_000n));
  const limit = Number(params.get("limit") ?? "100");
  if (params.get("direction") !== "forward")
    return { status: 400, body: "the simulated Loki answers direction=forward only" };
  const hits = store
    .entries(selector)
    .filter((e) => !e.duplicate && e.tenant === tenant && e.timestampNs >= start && e.timestampNs < end)
    .filter(
      (e) => ingesterEdgeNs === undefined || e.seq < store.flushedBefore || e.timestampNs >= ingesterEdgeNs,
    )
    .sort((a, b) => (a.timestampNs < b.timestampNs ? -1 : a.timestampNs > b.timestampNs ? 1 : 0))
    .slice(0, limit);
  const streams = new Map<string, { stream: Record<string, string>; values: unknown[] }>();
  for (const e of hits) {
    const key = JSON.stringify(Object.entries(e.labels).sort());
    let s = streams.get(key);
    if (!s) {
      s = { stream: e.labels, values: [] };
      streams.set(key, s);
    }
    s.values.push([String(e.timestampNs), e.line, { structuredMetadata: e.metadata }]);
  }
  const data = { resultType: "streams", encodingFlags: ["categorize-labels"], result: [...streams.values()] };
  return { status: 200, body: JSON.stringify({ status: "success", data }) };
}

// `sf2loki demo --loki-url`: the demo's events pushed into a Loki of the operator's choosing and counted
// back through LogQL, as an operator would check them in Grafana. Each run's simulated org gets an id of
// its own, so its streams (`sf_org_id`) never mix with an earlier run's in the same Loki.
import { randomBytes } from "node:crypto";
import { Sf2LokiError, describeError } from "../errors.ts";
import { originDispatcher } from "../util/routed-dispatchers.ts";

const PUSH_PATH = "/loki/api/v1/push";
/** Loki's default `max_entries_limit_per_query`. */
const PAGE = 5000;
/** Log queries are cut into slices of this span: a page then never spans a whole backlog. */
const SLICE_NS = 3_600_000_000_000n;

/** The push URL for what an operator typed: a Loki base URL, or the push URL itself. */
export function demoPushUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`--loki-url '${raw}' is not a URL; give Loki's base URL, e.g. http://localhost:3100`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new Error(`--loki-url must be http(s), got ${url.protocol}`);
  }
  const path = url.pathname.replace(/\/+$/, "");
  return `${url.origin}${path.endsWith(PUSH_PATH) ? path : `${path}${PUSH_PATH}`}`;
}

/** A Salesforce-shaped org id unique to this run (`00DDEMO` + 11 random characters). */
export function demoOrgId(): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  const bytes = randomBytes(11);
  let id = "00DDEMO";
  for (const b of bytes) id += alphabet[b % alphabet.length]!;
  return id;
}

/** What Loki holds of one event type: every stored copy (a metric query) and distinct events (a log query). */
export interface StoredCount {
  stored: number;
  distinct: number;
}

export interface LokiReadBack {
  /** Copies Loki stored per event type (`count_over_time`), cheap enough to poll. */
  stored(): Promise<Record<string, number>>;
  /** Stored copies and distinct EventIdentifiers per event type. */
  counts(): Promise<Record<string, StoredCount>>;
  /** The LogQL to paste into Grafana's Explore for this run. */
  readonly queries: readonly string[];
}

export function lokiReadBack(opts: {
  pushUrl: string;
  tenantId: string | undefined;
  orgId: string;
  /** The oldest event's time, ns; the range ends now. */
  startNs: bigint;
}): LokiReadBack {
  const base = opts.pushUrl.slice(0, -PUSH_PATH.length);
  const selector = `{sf_org_id="${opts.orgId}", source="pubsub"}`;
  const headers: Record<string, string> = opts.tenantId ? { "X-Scope-OrgID": opts.tenantId } : {};
  const get = async (path: string, params: Record<string, string>): Promise<unknown> => {
    const url = new URL(`${base}${path}?${new URLSearchParams(params).toString()}`);
    // Direct or through the environment's proxy, as the demo's pushes go.
    const http = originDispatcher(url.origin, { connectMs: 10_000, responseMs: 30_000 });
    let status: number;
    let text: string;
    try {
      const res = await http.request({
        origin: url.origin,
        path: `${url.pathname}${url.search}`,
        method: "GET",
        headers,
        signal: AbortSignal.timeout(30_000),
      });
      status = res.statusCode;
      text = await res.body.text();
    } catch (err) {
      throw new Sf2LokiError(
        "SF2LOKI_DEMO_READBACK",
        `could not count the demo's events in Loki: its query API at ${base} did not answer ` +
          `(${describeError(err)}); check --loki-url`,
        { cause: err },
      );
    } finally {
      await http.destroy();
    }
    if (status < 200 || status >= 300) {
      throw new Sf2LokiError(
        "SF2LOKI_DEMO_READBACK",
        `could not count the demo's events in Loki: its query API at ${base} answered HTTP ` +
          `${status} (${text.replace(/\s+/g, " ").trim().slice(0, 200)}); check --loki-url and --tenant-id`,
      );
    }
    return (JSON.parse(text) as { data: unknown }).data;
  };
  const endNs = (): bigint => BigInt(Date.now() + 60_000) * 1_000_000n;
  const stored = async (): Promise<Record<string, number>> => {
    const end = endNs();
    const rangeS = (end - opts.startNs) / 1_000_000_000n + 1n;
    const data = (await get("/loki/api/v1/query", {
      query: `sum by (event_type) (count_over_time(${selector}[${rangeS}s]))`,
      time: String(end),
    })) as { result: { metric: Record<string, string>; value: [number, string] }[] };
    const out: Record<string, number> = {};
    for (const r of data.result) out[r.metric.event_type ?? ""] = Number(r.value[1]);
    return out;
  };
  const distinct = async (): Promise<Record<string, number>> => {
    const seen = new Map<string, Set<string>>();
    const end = endNs();
    for (let slice = opts.startNs; slice < end; slice += SLICE_NS) {
      const sliceEnd = slice + SLICE_NS < end ? slice + SLICE_NS : end;
      let from = slice;
      for (;;) {
        const data = (await get("/loki/api/v1/query_range", {
          query: selector,
          start: String(from),
          end: String(sliceEnd),
          limit: String(PAGE),
          direction: "forward",
        })) as { result: { stream: Record<string, string>; values: [string, string][] }[] };
        let fresh = 0;
        let last = from;
        for (const s of data.result) {
          const type = s.stream.event_type ?? "";
          const ids = seen.get(type) ?? new Set<string>();
          seen.set(type, ids);
          for (const [ts, line] of s.values) {
            const t = BigInt(ts);
            if (t > last) last = t;
            const id = /"EventIdentifier": ?"([^"]+)"/.exec(line)?.[1] ?? `${ts}:${line}`;
            if (!ids.has(id)) {
              ids.add(id);
              fresh++;
            }
          }
        }
        if (fresh === 0 || last === from) break;
        from = last;
      }
    }
    return Object.fromEntries([...seen].map(([type, ids]) => [type, ids.size]));
  };
  return {
    stored,
    counts: async () => {
      const [copies, ids] = await Promise.all([stored(), distinct()]);
      const types = new Set([...Object.keys(copies), ...Object.keys(ids)]);
      return Object.fromEntries(
        [...types].map((type) => [type, { stored: copies[type] ?? 0, distinct: ids[type] ?? 0 }]),
      );
    },
    queries: [selector, `sum by (event_type) (count_over_time(${selector}[$__auto]))`],
  };
}

// The polling half of the demo world: the `sources:` blocks that poll what a simulated org holds on
// its REST side, and per polling key what the org holds versus what the Loki receiver accepted.
import type { AcceptedEntry, LabelMap, LokiReceiver } from "./loki.ts";
import type { SimPollingData } from "./salesforce-rest/generate.ts";
import type { SimData } from "./salesforce-rest/data.ts";
import type { SimOrg } from "./salesforce/index.ts";

/** Polling data whose categories do not collide with the demo's Pub/Sub topics (overlap guard). */
export const DEMO_POLLING: SimPollingData = {
  objects: { ApiAnomalyEventStore: { records: 500 } },
  eventLogFiles: { Report: { rows: 1000 }, URI: { rows: 1000, files: 2 } },
  apexLogs: 50,
};

export interface Delivery {
  /** Records the org holds now. */
  emitted: number;
  /** Of those, how many Loki accepted at least once. */
  delivered: number;
  /** Extra copies Loki accepted of held records. */
  duplicates: number;
  missing: number;
}

/** `salesforce:` for a simulated org started with `clientSecret`. */
export function simSalesforceConfig(org: SimOrg, clientSecret: string): Record<string, unknown> {
  return {
    auth_mode: "client_credentials",
    login_url: org.loginUrl,
    client_id: org.clientId,
    client_secret: clientSecret,
    org_id: org.orgId,
  };
}

/** The `sources:` blocks that poll everything in `data` (objects, ELF types, ApexLog). */
export function pollingSources(data: SimData): Record<string, unknown> {
  const objects = Object.keys(data.objects);
  const types = [...new Set(data.eventLogFiles.map((f) => f.EventType))];
  // Daily-only data (the `sf2loki sim` backlog) is polled at the Daily interval, so `doctor`'s
  // entitlement row and the daemon see the same files `backfill --interval Daily` loads.
  const daily = data.eventLogFiles.length > 0 && data.eventLogFiles.every((f) => f.Interval === "Daily");
  return {
    ...(objects.length > 0
      ? { eventlog_objects: { enabled: true, objects: objects.map((name) => ({ name })) } }
      : {}),
    ...(types.length > 0
      ? { eventlogfile: { enabled: true, event_types: types, ...(daily ? { interval: "Daily" } : {}) } }
      : {}),
    ...(data.apexLogs.length > 0 ? { apexlog: { enabled: true } } : {}),
  };
}

interface Feed {
  matcher: LabelMap;
  ids: () => Iterable<string>;
  idOf: (line: string, entry: AcceptedEntry) => string;
}

const OBJECT_ID = /"Id": ?"([^"]+)"/;
const REQUEST_ID = /"REQUEST_ID": ?"([^"]+)"/;
const APEX_BODY_ID = /^apexlog (\S+)$/m;

function* elfIds(data: SimData, type: string): Generator<string> {
  for (const f of data.eventLogFiles) {
    if (f.EventType !== type) continue;
    const first = f.firstRow ?? 0;
    for (let i = 0; i < f.rows; i++) yield `sim-${type}-${first + i}`;
  }
}

function feedsOf(data: SimData): Map<string, Feed> {
  const feeds = new Map<string, Feed>();
  const capture = (re: RegExp) => (line: string) => re.exec(line)?.[1] ?? "";
  for (const name of Object.keys(data.objects)) {
    feeds.set(`eventlog_objects:${name}`, {
      matcher: { source: "eventlog_objects", event_type: name },
      ids: () => (data.objects[name] ?? []).map((r) => String(r.Id)),
      idOf: capture(OBJECT_ID),
    });
  }
  for (const type of new Set(data.eventLogFiles.map((f) => f.EventType))) {
    feeds.set(`eventlogfile:${type}`, {
      matcher: { source: "eventlogfile", event_type: type },
      ids: () => elfIds(data, type),
      idOf: capture(REQUEST_ID),
    });
  }
  if (data.apexLogs.length > 0) {
    feeds.set("apexlog", {
      matcher: { source: "apexlog" },
      ids: () => data.apexLogs.map((l) => l.Id),
      // A body names its log; a metadata-only line (body skipped) carries the Id field.
      idOf: (line) => APEX_BODY_ID.exec(line)?.[1] ?? OBJECT_ID.exec(line)?.[1] ?? "",
    });
  }
  return feeds;
}

/** Per checkpoint key of `org`'s polling sources; `matcher` narrows Loki's side (`{org: "prod"}`). */
export function pollingDelivery(
  org: SimOrg,
  loki: LokiReceiver,
  matcher: LabelMap = {},
): Record<string, Delivery> {
  const out: Record<string, Delivery> = {};
  for (const [key, feed] of feedsOf(org.rest.data)) {
    const counts = loki.countBy(feed.idOf, { ...matcher, ...feed.matcher });
    let emitted = 0;
    let delivered = 0;
    let duplicates = 0;
    for (const id of feed.ids()) {
      emitted++;
      const n = counts.get(id) ?? 0;
      if (n > 0) delivered++;
      duplicates += Math.max(0, n - 1);
    }
    out[key] = { emitted, delivered, duplicates, missing: emitted - delivered };
  }
  return out;
}

/** Up to `limit` ids per key that Loki has not accepted. */
export function pollingMissingIds(
  org: SimOrg,
  loki: LokiReceiver,
  limit: number,
  matcher: LabelMap = {},
): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const [key, feed] of feedsOf(org.rest.data)) {
    const seen = loki.countBy(feed.idOf, { ...matcher, ...feed.matcher });
    const missing: string[] = [];
    for (const id of feed.ids()) {
      if (missing.length >= limit) break;
      if (!seen.has(id)) missing.push(id);
    }
    out[key] = missing;
  }
  return out;
}

// Threat Detection's newer events as the simulated org serves them: LoginAnomalyEvent (API v64) and
// UniversalAnomalyEvent (API v66), streamed on /event/<Name> and stored in <Name>Store, which the
// eventlog-objects source polls. One table of fields and one value generator feed both the Pub/Sub
// schema (events.ts) and the REST records (salesforce-rest/generate.ts), so a stored record and its
// streamed twin carry the same fields.
//
// Fields as Salesforce's Platform Events Developer Guide lists them:
// https://developer.salesforce.com/docs/platform/platform-events/guide/sforce-api-objects-loginanomalyevent.html
// https://developer.salesforce.com/docs/platform/field-reference/references/field-reference/salesforce-field-reference-loginanomalyevent.html
// https://developer.salesforce.com/docs/platform/platform-events/guide/sforce-api-objects-universalanomalyevent.html
// https://developer.salesforce.com/docs/platform/platform-events/guide/sforce-api-objects-universalanomalyeventstore.html
// The UniversalAnomalyEvent page as found lists AnomalySubType, EvaluationTime, EventDate,
// EventIdentifier, EventUuid, LoginKey and PolicyId and was cut off there; its remaining fields (Score,
// SecurityEventData, Summary, SessionKey, SourceIp, UserId, Username, PolicyOutcome) are taken from
// LoginAnomalyEvent, the sibling it consolidates. ReplayId is not part of the Avro payload here: Pub/Sub
// carries it beside the payload, as for every other sim topic.

/** The newer Threat Detection events, by their Pub/Sub short name; each has a `<name>Store` twin. */
export const THREAT_EVENTS = ["LoginAnomalyEvent", "UniversalAnomalyEvent"] as const;
export type ThreatEvent = (typeof THREAT_EVENTS)[number];

/**
 * AnomalySubType's documented picklist values common to both published versions of the page (one
 * adds MCPAnomaly, the other UniversalAnomaly); the sim cycles through them in event order.
 */
export const ANOMALY_SUBTYPES = [
  "ApiAnomaly",
  "CredentialStuffing",
  "GuestUserAnomaly",
  "LoginAnomaly",
  "ReportAnomaly",
  "SessionHijacking",
] as const;

export type ThreatFieldType = "string" | "double";

const SHARED: readonly [string, ThreatFieldType][] = [
  ["CreatedById", "string"],
  ["EventUuid", "string"],
  ["EvaluationTime", "double"],
  ["PolicyId", "string"],
  ["PolicyOutcome", "string"],
  ["Score", "double"],
  ["SecurityEventData", "string"],
  ["Summary", "string"],
];

/** Per event, its fields beyond the common identity ones (EventIdentifier, dates, user, keys, IP). */
export const THREAT_FIELDS: Readonly<Record<ThreatEvent, readonly [string, ThreatFieldType][]>> = {
  LoginAnomalyEvent: [
    ...SHARED,
    ["FeatureContribution", "double"],
    ["FeatureName", "string"],
    ["FeatureValue", "double"],
  ],
  UniversalAnomalyEvent: [["AnomalySubType", "string"], ...SHARED],
};

/** `LoginAnomalyEvent` or `LoginAnomalyEventStore` → `LoginAnomalyEvent`; anything else → undefined. */
export function threatEventOf(name: string): ThreatEvent | undefined {
  const base = name.endsWith("Store") ? name.slice(0, -"Store".length) : name;
  return (THREAT_EVENTS as readonly string[]).includes(base) ? (base as ThreatEvent) : undefined;
}

/** Features a login anomaly's model weighs, with a plausible value for each. */
const LOGIN_FEATURES: readonly [string, (rand: () => number) => string][] = [
  ["userAgent", (r) => (r() < 0.5 ? "python-requests/2.32" : "curl/8.7.1")],
  ["autonomousSystem", (r) => (r() < 0.5 ? "Bigleaf Networks, Inc." : "DigitalOcean, LLC")],
  ["country", (r) => (r() < 0.5 ? "RO" : "VN")],
  ["hourOfDay", (r) => String(Math.floor(r() * 24))],
  ["newDevice", () => "true"],
  ["rowCount", (r) => String(1000 + Math.floor(r() * 2_000_000))],
];

function uuid(rand: () => number): string {
  const hex = Array.from({ length: 32 }, () => Math.floor(rand() * 16).toString(16)).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-a${hex.slice(17, 20)}-${hex.slice(20)}`;
}

/**
 * The top contributing features, as SecurityEventData's JSON lists them ("the top five"), their
 * contributions in percent summing to at most 100.
 */
function securityEventData(rand: () => number): { json: string; top: { name: string; share: number } } {
  let left = 100;
  // Five of the features, in a per-event order.
  const order = LOGIN_FEATURES.map((f) => ({ f, key: rand() }))
    .sort((a, b) => a.key - b.key)
    .slice(0, 5);
  const features = order.map(({ f: [featureName, value] }, i) => {
    const share = i === 4 ? left : Math.round(left * (0.4 + rand() * 0.4) * 100) / 100;
    left = Math.round((left - share) * 100) / 100;
    return { featureName, featureValue: value(rand), featureContribution: `${share.toFixed(2)} %` };
  });
  // The remainder can outweigh the share before it: listed largest first, as Salesforce ranks them.
  features.sort(
    (a, b) => Number.parseFloat(b.featureContribution) - Number.parseFloat(a.featureContribution),
  );
  const first = features[0]!;
  return {
    json: JSON.stringify(features),
    top: { name: first.featureName, share: Number.parseFloat(first.featureContribution) },
  };
}

/**
 * The Threat Detection fields of event `n` (1-based) of `event`: Score a double in [0, 100) with two
 * decimals (the documented "number from 0 through 100"), AnomalySubType cycling by `n`.
 */
export function threatValues(
  event: ThreatEvent,
  rand: () => number,
  n: number,
  ids: { userId: string; username: string },
): Record<string, unknown> {
  const score = Math.round(rand() * 10_000) / 100;
  const data = securityEventData(rand);
  const subtype = ANOMALY_SUBTYPES[(n - 1) % ANOMALY_SUBTYPES.length]!;
  const what = event === "UniversalAnomalyEvent" ? subtype : "LoginAnomaly";
  const shared: Record<string, unknown> = {
    CreatedById: ids.userId,
    EventUuid: uuid(rand),
    EvaluationTime: Math.round(rand() * 4000) / 100,
    PolicyId: null,
    PolicyOutcome: "NoAction",
    Score: score,
    SecurityEventData: data.json,
    Summary: `${what} for ${ids.username}: ${data.top.name} contributed ${data.top.share.toFixed(2)} %`,
  };
  if (event === "UniversalAnomalyEvent") return { AnomalySubType: subtype, ...shared };
  return {
    ...shared,
    FeatureContribution: data.top.share,
    FeatureName: data.top.name,
    FeatureValue: Math.round(rand() * 100_000) / 100,
  };
}
